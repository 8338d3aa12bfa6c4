"""The API versions raykafka's listeners serve, which ApiVersions advertises: each API's range is
its ``versions`` in the API table (actors/core/apis.py); here is why the ranges are what they are.

A client uses, for each API, the highest version both sides support, so a range here must only
hold versions whose every field the translation honours (or that a broker may ignore, as Kafka's
own broker ignores them when a feature is off). The ranges reach the flexible versions (KIP-482)
that Kafka 4.x's Java client, librdkafka 2.x, kafka-python, aiokafka and KafkaJS prefer, and stop
below a version that needs what raykafka lacks:
- Produce 3-12: v9 is flexible; v10-v11 only add optional tagged answers (KIP-951's current
  leader, which Kafka too leaves out but for NOT_LEADER_OR_FOLLOWER; a client without it refreshes
  metadata) and transactional error codes; v12 is KIP-890's transactions v2, which a client uses
  only where ApiVersions finalizes ``transaction.version`` (raykafka lists no features). v13 names
  topics by id (KIP-516), which raykafka does not keep.
- Fetch 4-12: v12 is flexible and adds a consumer's LastFetchedEpoch, answered with the
  diverging epoch when the log ends that epoch before the fetch offset, as Kafka answers any
  fetcher (Kafka's Java consumer and librdkafka send -1); its tagged ClusterId is KRaft's
  controller quorum's and ignored by Kafka's brokers too. v13 names topics by id (KIP-516), v14
  answers KIP-405 tiered storage.
- ListOffsets 1-6: v6 is flexible; v7 looks up the max timestamp (-3, KIP-734), v8-v9 tiered
  storage's offsets (KIP-405), which raykafka's log does not answer.
- Metadata 0-9: v9 is flexible. librdkafka 2.x (2.16 too) writes its all-topics v9 request with
  the topic array's 4-byte placeholder (00 00 00 00) where a compact null (one byte) belongs, so
  the flags after it shift, the body seems to end with a tagged field of tag 0, and one byte is
  left over: Kafka reads it as all topics because it skips the tag and ignores bytes after a
  request's body, and so does raykafka (frames.py). v10 answers topic ids (KIP-516), which raykafka
  does not keep.
- FindCoordinator 0-5: v3 is flexible; v4 batches several keys in one request (KIP-699), each
  answered as a single key is; v5 is v4 (it only lets a transactional client take
  TRANSACTION_ABORTABLE, which raykafka never answers). v6 adds share groups' key type (KIP-932).
- InitProducerId 0-5: idempotent producers (a transactional id is refused at every version); v3's
  producer id and epoch are for KIP-360's epoch bump, which Kafka too ignores without a
  transactional id (a new id is handed out); v6 adds KIP-939's two-phase commit.
- CreateTopics 2-6: v5, the first flexible version, answers each new topic's partition count,
  replication factor and every config with its source (KIP-525), as DescribeConfigs describes
  them; v6 is v5 (KIP-599 may answer a quota error, which raykafka never does). v7 answers topic
  ids (KIP-516).
- DeleteTopics 1-5: v4 flexible, v5 an error message; v6 names topics by id.
- OffsetCommit 2-9: v8 flexible, v9 the same for classic groups (KIP-848 groups are not built);
  v10 names topics by id. OffsetFetch 1-7: v6 flexible, v7's require_stable is met at once (no
  transactional offsets are ever pending); v8 asks for several groups at once.
- JoinGroup 0-9: v7 answers the protocol type, v8's reason is only logged by Kafka, v9's
  skip_assignment stays false (the leader assigns, as at v8). SyncGroup 0-5 (v5's protocol type
  and name are checked). LeaveGroup 0-5 (v5's reasons are only logged). Heartbeat 0-4.
- DescribeGroups 0-5: v6 answers an unknown group GROUP_ID_NOT_FOUND (KIP-1043) rather than Dead.
- ListGroups 0-4: v4 filters by state; v5 filters by group type (KIP-848).
- DescribeCluster 0-2 (flexible only): see actors/core/messages/describe_cluster.py.
- CreatePartitions 0-3: v2 is flexible, v3 the same (KIP-599 may answer a quota error, which
  raykafka never does). DescribeLogDirs 1-4: v2 is flexible; v3 adds a top-level error code
  (always NONE, as Kafka's without authorization), v4 the volume's total and usable bytes, which
  each broker's storage measures; v5 adds KIP-1066's cordoned directories. OffsetDelete 0: its
  only version, which is not flexible.
- AlterPartitionReassignments 0-1 (flexible only; v1's allow_replication_factor_change, KIP-860, is
  checked) and ListPartitionReassignments 0, forwarded to the controller.
- The rest serve every version kio has schemas for: DeleteRecords, IncrementalAlterConfigs,
  AlterConfigs, ElectLeaders, DeleteGroups, OffsetForLeaderEpoch, ApiVersions (0-4),
  DescribeConfigs (1-4: kio has no v0), SaslAuthenticate. kio has no schemas for versions Kafka 4
  removed, so ranges start no lower than kio's.

A flexible request may carry tagged fields its schema does not name (a newer client's optional
fields): they are skipped, as Kafka skips them (``tagged_fields``; kio 0.6.5 alone refuses them).

SaslHandshake and SaslAuthenticate are listed although no listener speaks SASL: Kafka lists every
API on every listener. A client configured for SASL against a PLAINTEXT listener then sends its
SaslHandshake and gets Kafka's ILLEGAL_SASL_STATE answer (librdkafka reports "SASL PLAIN mechanism
handshake failed"), where an unlisted API got a closed connection from the listener, or, from
librdkafka, "SASL Handshake not supported by broker", which names the wrong cause.
"""
from __future__ import annotations

from actors.core.apis import WIRE_VERSIONS

API_VERSIONS_KEY = 18

# API key -> (min version, max version): each API's ``versions`` in the API table.
SUPPORTED_VERSIONS: dict[int, tuple[int, int]] = dict(WIRE_VERSIONS)
