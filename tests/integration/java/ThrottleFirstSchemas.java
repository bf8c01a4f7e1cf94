import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.types.Schema;

/**
 * Which responses start with throttle_time_ms, as this Kafka's own generated message classes lay
 * them out: prints one JSON object, api key -> {"defined": the response versions this Kafka has,
 * "throttle_first": those whose first field is throttle_time_ms}.
 */
public final class ThrottleFirstSchemas {
    private ThrottleFirstSchemas() {
    }

    public static void main(String[] args) {
        List<String> entries = new ArrayList<>();
        for (ApiMessageType type : ApiMessageType.values()) {
            Schema[] schemas = type.responseSchemas();
            List<String> defined = new ArrayList<>();
            List<String> throttleFirst = new ArrayList<>();
            for (int version = 0; version < schemas.length; version++) {
                Schema schema = schemas[version];
                if (schema == null) {
                    continue;  // a version this Kafka no longer has
                }
                defined.add(Integer.toString(version));
                if (schema.numFields() > 0 && schema.get(0).def.name.equals("throttle_time_ms")) {
                    throttleFirst.add(Integer.toString(version));
                }
            }
            entries.add("\"" + type.apiKey() + "\": {\"defined\": [" + String.join(", ", defined)
                    + "], \"throttle_first\": [" + String.join(", ", throttleFirst) + "]}");
        }
        System.out.println("{" + String.join(", ", entries) + "}");
    }
}
