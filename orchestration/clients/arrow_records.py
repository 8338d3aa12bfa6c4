"""Handed-out record batches as Arrow columns, the shape Spark's Kafka source gives a DataFrame.

``Consumer.poll_arrow`` uses it. Each v2 batch is read with aiokafka's C reader (about a
microsecond a record here; a numpy reader of the varint fields measured no faster, since finding
where each record starts is a pass in Python anyway), and its keys, values, offsets and timestamps
go straight into Arrow arrays: no ``ConsumerRecord`` is made, and the table holds no Python object
per record once built.
"""
from __future__ import annotations

from aiokafka.record._crecords import DefaultRecordBatch as _CDefaultRecordBatch

from orchestration.clients.fetched import FetchedBatch

_LOG_APPEND_TIME = 1  # aiokafka's timestamp_type of a batch with LogAppendTime


def arrow_schema(with_headers: bool):
    """The columns of Spark's Kafka source (``spark.read.format("kafka")``), in its order: key,
    value (binary), topic (string), partition (int32), offset (int64), timestamp (ms),
    timestampType (0 create time, 1 log append time), and headers (list of key/value structs)
    when asked for."""
    import pyarrow as pa
    fields = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
              ("offset", pa.int64()), ("timestamp", pa.timestamp("ms")), ("timestampType", pa.int32())]
    if with_headers:
        fields.append(("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
    return pa.schema(fields)


def record_batches_to_arrow(batches: list[FetchedBatch], *, with_headers: bool = False):
    """One ``pyarrow.Table`` (``arrow_schema``) of every record in ``batches``, in their order, one
    Arrow record batch per run of Kafka batches of the same partition."""
    import pyarrow as pa
    schema = arrow_schema(with_headers)
    runs: list[list[FetchedBatch]] = []
    for batch in batches:
        if runs and (runs[-1][-1].topic, runs[-1][-1].partition) == (batch.topic, batch.partition):
            runs[-1].append(batch)
        else:
            runs.append([batch])
    return pa.Table.from_batches([_arrow_run(run, schema, with_headers) for run in runs], schema=schema)


def _arrow_run(run: list[FetchedBatch], schema, with_headers: bool):
    import pyarrow as pa
    keys, values, offsets, timestamps, timestamp_types, headers = [], [], [], [], [], []
    for batch in run:
        reader = _CDefaultRecordBatch(batch.data)
        records = list(reader)
        keys += [r.key for r in records]
        values += [r.value for r in records]
        offsets += [r.offset for r in records]
        timestamps += [r.timestamp for r in records]
        timestamp_types += [int(reader.timestamp_type == _LOG_APPEND_TIME)] * len(records)
        if with_headers:
            headers += [[(k, v) for k, v in r.headers] for r in records]
    count = len(offsets)
    columns = [pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
               pa.repeat(pa.scalar(run[0].topic, pa.string()), count),
               pa.repeat(pa.scalar(run[0].partition, pa.int32()), count),
               pa.array(offsets, pa.int64()), pa.array(timestamps, pa.timestamp("ms")),
               pa.array(timestamp_types, pa.int32())]
    if with_headers:
        columns.append(pa.array(headers, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
