"""The follower's side of replication, as a pure core: Kafka's replica fetcher threads.

- ``fetcher.FetcherCore``: one fetcher thread's logic, which a ``ReplicaFetcherActor`` shell
  drives (start here); ``fetch_state``: its partitions' states and their transitions.
- ``fetch_session_handler``: incremental fetch sessions (KIP-227), the fetcher's side.
- ``truncation``: where a follower's log must end to be a prefix of its leader's (KIP-101, KIP-279).
- ``fetcher_manager``: the broker's map of which fetcher follows which partition.
- ``follower_messages``: what a fetcher asks of its own broker, and what the broker tells it.
"""
