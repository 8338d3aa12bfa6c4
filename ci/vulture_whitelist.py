# Names vulture reports as unused in actors/, orchestration/ and benchmarks/ that are used all the
# same, each group with why. Vulture reads this file as code that uses the names below; it is never
# run. tests/unit/test_dead_code.py runs vulture with it and fails on any finding not listed here:
# delete dead code rather than adding it to this file.
# ruff: noqa
# type: ignore

# Kafka's protocol tables, complete as Kafka defines them: error codes a peer may send us, and
# IncrementalAlterConfigs' operation numbers (APPEND/SUBTRACT are answered INVALID_REQUEST).
(_.TOPIC_AUTHORIZATION_FAILED, _.CLUSTER_AUTHORIZATION_FAILED, _.INVALID_TIMESTAMP, _.UNSUPPORTED_SASL_MECHANISM,
 _.UNSUPPORTED_FOR_MESSAGE_FORMAT, _.POLICY_VIOLATION, _.DUPLICATE_SEQUENCE_NUMBER, _.INVALID_TXN_STATE,
 _.INVALID_PRODUCER_ID_MAPPING, _.INVALID_TRANSACTION_TIMEOUT, _.CONCURRENT_TRANSACTIONS,
 _.TRANSACTION_COORDINATOR_FENCED, _.SECURITY_DISABLED, _.OPERATION_NOT_ATTEMPTED, _.LOG_DIR_NOT_FOUND,
 _.SASL_AUTHENTICATION_FAILED, _.DELEGATION_TOKEN_AUTH_DISABLED, _.DELEGATION_TOKEN_NOT_FOUND,
 _.DELEGATION_TOKEN_OWNER_MISMATCH, _.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, _.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
 _.DELEGATION_TOKEN_EXPIRED, _.INVALID_PRINCIPAL_TYPE, _.LISTENER_NOT_FOUND, _.TOPIC_DELETION_DISABLED,
 _.GROUP_SUBSCRIBED_TO_TOPIC, _.UNSTABLE_OFFSET_COMMIT, _.THROTTLING_QUOTA_EXCEEDED, _.PRODUCER_FENCED,
 _.RESOURCE_NOT_FOUND, _.DUPLICATE_RESOURCE, _.UNACCEPTABLE_CREDENTIAL, _.INCONSISTENT_VOTER_SET,
 _.FEATURE_UPDATE_FAILED, _.PRINCIPAL_DESERIALIZATION_FAILURE, _.SNAPSHOT_NOT_FOUND, _.POSITION_OUT_OF_RANGE,
 _.UNKNOWN_TOPIC_ID, _.INCONSISTENT_TOPIC_ID, _.TRANSACTIONAL_ID_NOT_FOUND, _.FETCH_SESSION_TOPIC_ID_ERROR,
 _.NEW_LEADER_ELECTED)
(_.OP_APPEND, _.OP_SUBTRACT)

# Fields of Kafka's messages and of raykafka's own records: set by the sender or the constructor,
# part of what the message carries on the wire or in a result, read by peers or by people.
(_.current_metadata_offset, _.want_fence, _.want_shut_down, _.is_caught_up, _.is_fenced, _.should_shut_down,
 _.member_metadata, _.transaction_timeout_ms, _.host_name, _.replica_nodes, _.isr_nodes, _.is_internal,
 _.batch_count, _.spark_startup_s)

# Called by name: chaos schedule files name ``isolate``; ``orchestration.__getattr__`` is the
# module's lazy import.
(_.isolate, _.__getattr__)

# Protocols others call: Python's dict API (WatchedDict.copy), the consumer's rebalance listener,
# and ``__exit__``'s third argument.
(_.copy, _.on_partitions_revoked, _.on_partitions_assigned, _.exc_info)

# Public API for users (docs/python-api.md, docs/spark.md): Spark's topic read/write and their columns, Consumer.offsets_for_times,
# workload sizes, and the integration tests' failover-matrix rows.
(_.read_topic, _.write_topic, _.KAFKA_SOURCE_COLUMNS, _.offsets_for_times, _.consumers, _.matrix_runs)

# What the tests observe to check real behaviour (reads counted, evictions, the log's shape, a
# heartbeat thread's life, events written, network rules matched), and the simulator's steps the
# scenario files drive (tests/support/scenario_runner.py).
(_.reads, _.evictions, _.open_files, _.unsynced_bytes, _.corrupt, _.earliest_entry, _.index_entries,
 _.active_segment, _.number_of_segments, _.producer_state, _.maybe_increment_log_start_offset,
 _.in_flight_request, _.alive, _.events_written, _.samples_written, _.matched, _.decode_request,
 _.encode_response, _.kill_fetcher, _.stop_consumer, _.truncations_of)

# Ray actor methods only tests call (fault injection's ``fail_worker``), and attributes that hold a
# shell's asyncio tasks so they are not collected.
(_.fail_worker, _._ticker, _._lag)

# The admin API users call (docs/python-api.md, docs/chaos-and-simulator.md): Kafka's QueueSize per broker channel, preferred-leader election.
(_.controller_queue_sizes, _.elect_preferred_leaders)

# What tests observe (a driver's requests in flight) and a simulator step the scenario files drive.
(_.requests_pending, _.drop_matching)

# Apache Kafka as a peer to compare with (orchestration/apache_kafka.py): the conformance tests
# (tests/integration/test_conformance_tools.py) fetch, start and drive it; the benchmarks will too.
(_.fetch_kafka, _.run_tool, _.ApacheKafkaCluster, _.start_tool, _.kill_node, _.restart_node)
# A log cleaner's round in one place (one process, one storage), which the unit tests drive; a broker
# splits the same steps between itself and its cleaner actor (cleaner_manager.py, actors/log_cleaner.py).
(_.clean_filthiest_log, _.replace_segments)

# DescribeLogDirs' answer fields: read by the wire codec by name (actors/wire/convert.py).
(_.partition_size, _.offset_lag, _.is_future_key)

# DescribeCluster's wire fields (actors/core/messages/describe_cluster.py): read from and written to the wire by name.
(_.include_fenced_brokers, _.cluster_authorized_operations)

# CreateTopics v5's config fields (KIP-525, actors/core/messages/create_topics.py): written to the wire by name.
(_.config_source, _.is_sensitive)

# argparse reads a parser's formatter_class when it prints help (orchestration/commands/options.py).
(_.formatter_class,)

# Kafka 2.4's broker config table (actors/core/kafka_broker_config_defs.py, generated): each key's
# dynamic update mode is recorded as Kafka defines it; tests/unit/test_broker_config_entries.py reads it.
_.update_mode
