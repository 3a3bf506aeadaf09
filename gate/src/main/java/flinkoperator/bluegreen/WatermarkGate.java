package flinkoperator.bluegreen;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Entry point of the blue/green gate. Put it right before the sink:
 *
 * <pre>{@code
 * DataStream<Event> gated = WatermarkGate.apply(events, env.getConfiguration(), e -> e.timestamp);
 * gated.sinkTo(sink);
 * }</pre>
 *
 * <p>In a child of a FlinkBlueGreenDeployment in ADVANCED mode the gate decides, from each
 * record's event time and the job's watermark, whether this job or the other one writes the
 * record; in any other job it passes everything.
 */
public final class WatermarkGate {
    private static final Logger LOG = LoggerFactory.getLogger(WatermarkGate.class);

    /** The name and uid {@link #apply} gives the gate's operator. */
    public static final String OPERATOR_NAME = "bluegreen-gate";

    private WatermarkGate() {}

    /**
     * Makes the gate from the job's configuration ({@code env.getConfiguration()} in the job's
     * main). A job that is not a blue/green ADVANCED child gets a gate that passes everything.
     *
     * @throws IllegalArgumentException when the blue/green keys are set only in part or malformed
     */
    public static <T> WatermarkGateFunction<T> create(
            ReadableConfig config, EventTimeExtractor<T> eventTime) {
        GateSettings settings = GateSettings.from(config);
        if (settings == null) {
            LOG.info(
                    "blue/green gate: {} is not set, so this job is not a blue/green ADVANCED"
                            + " child: the gate passes every record",
                    GateSettings.CONFIGMAP_NAME);
        } else {
            LOG.info(
                    "blue/green gate: {} child of transition {}, ConfigMap {}, polled every {} ms,"
                            + " idle timeout {} ms",
                    settings.colour,
                    settings.transitionId,
                    settings.configMapName,
                    settings.pollIntervalMs,
                    settings.idleTimeoutMs);
        }
        return new WatermarkGateFunction<>(
                settings, eventTime, KubernetesConfigMapStore::inPod);
    }

    /**
     * {@code stream.process(create(config, eventTime))}, named and with uid {@value
     * #OPERATOR_NAME}, of the stream's type.
     */
    public static <T> DataStream<T> apply(
            DataStream<T> stream, ReadableConfig config, EventTimeExtractor<T> eventTime) {
        return stream.process(create(config, eventTime), stream.getType())
                .name(OPERATOR_NAME)
                .uid(OPERATOR_NAME);
    }
}
