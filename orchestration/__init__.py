"""Starting and steering a raykafka cluster from outside: the Cluster API and its clients."""
from orchestration.cluster import Cluster, PartitionDescription
from orchestration.consumer import Consumer
from orchestration.errors import KafkaError
from orchestration.producer import Producer
from orchestration.records import ConsumerRecord, RecordMetadata

__all__ = ["Cluster", "Consumer", "ConsumerRecord", "KafkaError", "PartitionDescription", "Producer",
           "RecordMetadata"]
