// A Java application on Apache Kafka's kafka-clients, unchanged, as the conformance tests run it
// (tests/integration/test_conformance_clients.py): the Admin client's topic, config and group calls,
// an idempotent acks=all producer, and a consumer group of three members that commit. Run with
// Java 17's single-file launcher:
//   java -cp '<kafka libs>/*' ClientStory.java <bootstrap servers> <topic> <group>
// It prints one JSON object on its last line: what it saw, in terms that do not depend on which
// system served it, so the same program's output can be compared between Apache Kafka and raykafka.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientStory {
    static final int PARTITIONS = 3;
    static final int RECORDS = 300;
    static final int MEMBERS = 3;
    static final long DEADLINE_MS = 120_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        Map<String, Object> seen = new LinkedHashMap<>();
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            int brokers = admin.describeCluster().nodes().get(60, TimeUnit.SECONDS).size();
            short replicationFactor = (short) Math.min(3, brokers);
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, replicationFactor)))
                .all().get(60, TimeUnit.SECONDS);
            seen.put("topic listed", admin.listTopics().names().get(60, TimeUnit.SECONDS).contains(topic));
            TopicDescription description = waitForLeaders(admin, topic);
            seen.put("partitions", description.partitions().size());
            seen.put("replicas are the replication factor", description.partitions().stream()
                .allMatch(p -> p.replicas().size() == replicationFactor));

            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "123456789"), AlterConfigOp.OpType.SET))))
                .all().get(60, TimeUnit.SECONDS);
            ConfigEntry retention = admin.describeConfigs(List.of(resource)).all().get(60, TimeUnit.SECONDS)
                .get(resource).get("retention.ms");
            seen.put("retention.ms after an incremental alter", retention.value());
            seen.put("retention.ms source", retention.source().toString());

            seen.putAll(produce(bootstrap, topic));
            seen.putAll(consumeAsAGroup(bootstrap, topic, group));

            seen.put("group listed", admin.listConsumerGroups().all().get(60, TimeUnit.SECONDS).stream()
                .anyMatch(listing -> listing.groupId().equals(group)));
            ConsumerGroupDescription groupDescription = admin.describeConsumerGroups(List.of(group))
                .all().get(60, TimeUnit.SECONDS).get(group);
            seen.put("group state after the members left", groupDescription.groupState().toString());
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            long committedTotal = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            seen.put("committed offsets, summed", committedTotal);
            admin.deleteConsumerGroups(List.of(group)).all().get(60, TimeUnit.SECONDS);
            seen.put("group listed after delete", admin.listConsumerGroups().all().get(60, TimeUnit.SECONDS)
                .stream().anyMatch(listing -> listing.groupId().equals(group)));
            admin.deleteTopics(List.of(topic)).all().get(60, TimeUnit.SECONDS);
            seen.put("topic listed after delete", waitTopicGone(admin, topic));
        }
        System.out.println(toJson(seen));
    }

    static TopicDescription waitForLeaders(Admin admin, String topic) throws Exception {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (true) {
            try {
                TopicDescription description = admin.describeTopics(List.of(topic)).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get(topic);
                if (description.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
                    return description;
                }
            } catch (java.util.concurrent.ExecutionException retriable) {
                // the topic is not in every broker's metadata yet
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("no leader for every partition of " + topic + " within the deadline");
            }
            Thread.sleep(200);
        }
    }

    static boolean waitTopicGone(Admin admin, String topic) throws Exception {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (admin.listTopics().names().get(60, TimeUnit.SECONDS).contains(topic)) {
            if (System.currentTimeMillis() > deadline) {
                return true;
            }
            Thread.sleep(200);
        }
        return false;
    }

    static Map<String, Object> produce(String bootstrap, String topic) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        Map<String, Object> seen = new LinkedHashMap<>();
        List<Future<RecordMetadata>> sends = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < RECORDS; i++) {
                sends.add(producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "key-" + i, "value-" + i)));
            }
            producer.flush();
            Map<Integer, Set<Long>> offsets = new TreeMap<>();
            for (Future<RecordMetadata> send : sends) {
                RecordMetadata metadata = send.get(60, TimeUnit.SECONDS);
                offsets.computeIfAbsent(metadata.partition(), p -> new HashSet<>()).add(metadata.offset());
            }
            seen.put("acknowledged", sends.size());
            // Each partition's acknowledged offsets are 0..n-1 exactly: no gap, no duplicate.
            seen.put("acknowledged offsets dense per partition", offsets.values().stream()
                .allMatch(set -> set.size() == RECORDS / PARTITIONS
                    && set.stream().allMatch(o -> o >= 0 && o < RECORDS / PARTITIONS)));
        }
        return seen;
    }

    static Map<String, Object> consumeAsAGroup(String bootstrap, String topic, String group) throws Exception {
        Set<String> values = ConcurrentHashMap.newKeySet();
        AtomicInteger read = new AtomicInteger();
        Map<String, Set<Integer>> partitionsByMember = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(1);
        List<Thread> members = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int m = 0; m < MEMBERS; m++) {
            String member = "member-" + m;
            Thread thread = new Thread(() -> {
                Properties props = new Properties();
                props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                props.put(ConsumerConfig.CLIENT_ID_CONFIG, member);
                props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
                    consumer.subscribe(List.of(topic));
                    long deadline = System.currentTimeMillis() + DEADLINE_MS;
                    // Every member polls until the whole group has read everything, so that no
                    // member leaves (and triggers a rebalance) while another is still reading.
                    while (done.getCount() > 0 && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                            if (values.add(record.value())) {
                                read.incrementAndGet();
                            }
                            partitionsByMember.computeIfAbsent(member, k -> ConcurrentHashMap.newKeySet())
                                .add(record.partition());
                        }
                        consumer.commitSync();
                        if (read.get() >= RECORDS) {
                            done.countDown();
                        }
                    }
                    consumer.commitSync();
                } catch (Throwable failure) {
                    synchronized (failures) {
                        failures.add(failure);
                    }
                    done.countDown();
                }
            });
            thread.start();
            members.add(thread);
        }
        for (Thread thread : members) {
            thread.join(DEADLINE_MS + 30_000);
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a group member failed", failures.get(0));
        }
        Map<String, Object> seen = new LinkedHashMap<>();
        seen.put("distinct values read by the group", values.size());
        Set<Integer> all = new HashSet<>();
        partitionsByMember.values().forEach(all::addAll);
        seen.put("partitions read by the group", all.size());
        return seen;
    }

    static String toJson(Map<String, Object> map) {
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<String, Object> entry : map.entrySet()) {
            if (out.length() > 1) {
                out.append(", ");
            }
            out.append('"').append(entry.getKey()).append("\": ");
            Object value = entry.getValue();
            if (value instanceof String) {
                out.append('"').append(((String) value).replace("\"", "\\\"")).append('"');
            } else {
                out.append(value);
            }
        }
        return out.append('}').toString();
    }
}
