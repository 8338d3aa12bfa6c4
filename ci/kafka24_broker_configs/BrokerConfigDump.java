// Prints Kafka 2.4's broker config definitions, one a line, tab-separated: name, ConfigDef type,
// default as Kafka's DescribeConfigs prints it ("\N" where there is none), the dynamic update mode
// ("read-only", "per-broker" or "cluster-wide", from DynamicBrokerConfig) and the broker synonyms
// in precedence order (DynamicBrokerConfig.brokerConfigSynonyms), comma-separated. Run by
// generate.sh with Kafka 2.4's jars on the class path (Java's single-file launcher).
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;

public class BrokerConfigDump {
    public static void main(String[] args) throws Exception {
        // KafkaConfig's private configDef, by its accessor's name in the bytecode.
        ConfigDef definitions = (ConfigDef) kafka.server.KafkaConfig$.class
            .getMethod("kafka$server$KafkaConfig$$configDef").invoke(kafka.server.KafkaConfig$.MODULE$);
        Map<String, String> modes = kafka.server.DynamicBrokerConfig$.MODULE$.dynamicConfigUpdateModes();
        for (ConfigDef.ConfigKey key : new TreeMap<>(definitions.configKeys()).values()) {
            Object value = key.defaultValue;
            String shown = (value == null || value == ConfigDef.NO_DEFAULT_VALUE)
                ? "\\N" : ConfigDef.convertToString(value, key.type);
            String synonyms = String.join(",", scala.collection.JavaConverters.seqAsJavaList(
                kafka.server.DynamicBrokerConfig$.MODULE$.brokerConfigSynonyms(key.name, false)));
            System.out.println(key.name + "\t" + key.type + "\t" + shown + "\t"
                + modes.getOrDefault(key.name, "read-only") + "\t" + synonyms);
        }
    }
}
