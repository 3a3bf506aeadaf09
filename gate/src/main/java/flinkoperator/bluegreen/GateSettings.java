package flinkoperator.bluegreen;

import java.io.Serializable;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;

/** What a gate learns from the job's configuration; shipped with the function to every subtask. */
final class GateSettings implements Serializable {
    private static final long serialVersionUID = 1L;

    static final String CONFIGMAP_NAME = "bluegreen.configmap.name";
    static final String DEPLOYMENT_TYPE = "bluegreen.active-deployment-type";
    static final String TRANSITION_ID = "bluegreen.transition-id";
    static final String NAMESPACE = "kubernetes.namespace";
    static final String POLL_INTERVAL = "bluegreen.gate.poll-interval";
    static final String IDLE_TIMEOUT = "bluegreen.gate.idle-timeout";

    static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);
    static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);

    final String configMapName;
    /** This child's colour, {@code BLUE} or {@code GREEN}. */
    final String colour;
    /** The id of the transition that created this child. */
    final String transitionId;
    /** May be null: then the pod's service account namespace is used. */
    final String namespace;

    final long pollIntervalMs;
    final long idleTimeoutMs;

    GateSettings(
            String configMapName,
            String colour,
            String transitionId,
            String namespace,
            Duration pollInterval,
            Duration idleTimeout) {
        this.configMapName = Objects.requireNonNull(configMapName);
        this.colour = Objects.requireNonNull(colour);
        this.transitionId = Objects.requireNonNull(transitionId);
        this.namespace = namespace;
        this.pollIntervalMs = Math.max(1, pollInterval.toMillis());
        this.idleTimeoutMs = Math.max(0, idleTimeout.toMillis());
    }

    private static ConfigOption<String> stringKey(String key) {
        return ConfigOptions.key(key).stringType().noDefaultValue();
    }

    /**
     * @return the settings, or null when the job is not a blue/green ADVANCED child (none of the
     *     three keys the operator injects is set)
     * @throws IllegalArgumentException when only some keys are set or a value is malformed
     */
    static GateSettings from(ReadableConfig config) {
        String name = trimmed(config.get(stringKey(CONFIGMAP_NAME)));
        String colour = trimmed(config.get(stringKey(DEPLOYMENT_TYPE)));
        String transition = trimmed(config.get(stringKey(TRANSITION_ID)));
        if (name == null && colour == null && transition == null) {
            return null;
        }
        List<String> missing = new ArrayList<>();
        if (name == null) {
            missing.add(CONFIGMAP_NAME);
        }
        if (colour == null) {
            missing.add(DEPLOYMENT_TYPE);
        }
        if (transition == null) {
            missing.add(TRANSITION_ID);
        }
        if (!missing.isEmpty()) {
            throw new IllegalArgumentException(
                    "blue/green gate: the job's configuration sets only some of "
                            + CONFIGMAP_NAME + ", " + DEPLOYMENT_TYPE + " and " + TRANSITION_ID
                            + "; missing: " + String.join(", ", missing)
                            + ". The operator sets all three on the children of a"
                            + " FlinkBlueGreenDeployment in ADVANCED mode; set all or none.");
        }
        String upper = colour.toUpperCase(Locale.ROOT);
        if (!upper.equals("BLUE") && !upper.equals("GREEN")) {
            throw new IllegalArgumentException(
                    "blue/green gate: " + DEPLOYMENT_TYPE + " is '" + colour
                            + "', expected BLUE or GREEN");
        }
        return new GateSettings(
                name,
                upper,
                transition,
                trimmed(config.get(stringKey(NAMESPACE))),
                duration(config, POLL_INTERVAL, DEFAULT_POLL_INTERVAL),
                duration(config, IDLE_TIMEOUT, DEFAULT_IDLE_TIMEOUT));
    }

    private static Duration duration(ReadableConfig config, String key, Duration fallback) {
        String text = trimmed(config.get(stringKey(key)));
        if (text == null) {
            return fallback;
        }
        try {
            return parseDuration(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "blue/green gate: " + key + " = '" + text + "': " + e.getMessage(), e);
        }
    }

    /**
     * Parses a duration as Flink writes them: a number with an optional unit ("500 ms", "1 s",
     * "30s", "2 min", "1h"; no unit means milliseconds) or ISO-8601 ("PT30S").
     */
    static Duration parseDuration(String text) {
        String t = text.trim();
        if (t.isEmpty()) {
            throw new IllegalArgumentException("empty duration");
        }
        if (t.charAt(0) == 'P' || t.charAt(0) == 'p') {
            try {
                return Duration.parse(t.toUpperCase(Locale.ROOT));
            } catch (DateTimeParseException e) {
                throw new IllegalArgumentException("not an ISO-8601 duration");
            }
        }
        int i = 0;
        while (i < t.length() && Character.isDigit(t.charAt(i))) {
            i++;
        }
        if (i == 0) {
            throw new IllegalArgumentException(
                    "expected a number and a unit such as '500 ms', '1 s' or '2 min'");
        }
        long amount;
        try {
            amount = Long.parseLong(t.substring(0, i));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("number too large");
        }
        String unit = t.substring(i).trim().toLowerCase(Locale.ROOT);
        switch (unit) {
            case "":
            case "ms":
            case "milli":
            case "millis":
            case "millisecond":
            case "milliseconds":
                return Duration.ofMillis(amount);
            case "s":
            case "sec":
            case "secs":
            case "second":
            case "seconds":
                return Duration.ofSeconds(amount);
            case "m":
            case "min":
            case "mins":
            case "minute":
            case "minutes":
                return Duration.ofMinutes(amount);
            case "h":
            case "hour":
            case "hours":
                return Duration.ofHours(amount);
            case "d":
            case "day":
            case "days":
                return Duration.ofDays(amount);
            default:
                throw new IllegalArgumentException(
                        "unknown unit '" + unit + "' (use ms, s, min, h or d)");
        }
    }

    private static String trimmed(String s) {
        if (s == null) {
            return null;
        }
        String t = s.trim();
        return t.isEmpty() ? null : t;
    }
}
