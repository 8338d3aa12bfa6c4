"""Starting and steering a raykafka cluster from outside: the Cluster API and its clients."""
from orchestration.cluster import Cluster, PartitionDescription
from orchestration.consumer import Consumer
from orchestration.consumer_coordinator import CommitFailedError
from orchestration.errors import KafkaError
from orchestration.producer import Producer
from orchestration.records import ConsumerRecord, RecordMetadata

__all__ = ["Cluster", "CommitFailedError", "Consumer", "ConsumerRecord", "KafkaError", "PartitionDescription", "Producer",
           "RecordMetadata"]
