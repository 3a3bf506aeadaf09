package flinkoperator.bluegreen;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The gate in front of a job's sink: passes or drops each record by its event time, the subtask's
 * watermark and the blue/green ConfigMap. Made by {@link WatermarkGate#create}.
 *
 * @param <T> the record type
 */
public class WatermarkGateFunction<T> extends ProcessFunction<T, T> {
    private static final long serialVersionUID = 1L;

    /** The gauge the operator reads: 1 once this subtask of the old job has handed over. */
    public static final String HAND_OVER_GAUGE = "bluegreenGateHandOverDone";

    /** Makes the store a subtask talks to. */
    interface StoreFactory extends Serializable {
        ConfigMapStore create(String namespace, String name) throws IOException;
    }

    /** Null: not a blue/green child, everything passes. */
    private final GateSettings settings;

    private final EventTimeExtractor<T> eventTime;
    private final StoreFactory stores;

    private transient GateRuntime runtime;

    WatermarkGateFunction(
            GateSettings settings, EventTimeExtractor<T> eventTime, StoreFactory stores) {
        if (eventTime == null) {
            throw new NullPointerException("eventTime");
        }
        this.settings = settings;
        this.eventTime = eventTime;
        this.stores = stores;
    }

    @Override
    public void open(OpenContext openContext) throws Exception {
        super.open(openContext);
        if (settings == null) {
            getRuntimeContext().getMetricGroup().gauge(HAND_OVER_GAUGE, (Gauge<Integer>) () -> 0);
            return;
        }
        TaskInfo task = getRuntimeContext().getTaskInfo();
        String label =
                "gate " + (task.getIndexOfThisSubtask() + 1) + "/"
                        + task.getNumberOfParallelSubtasks() + " of " + settings.colour
                        + " (transition " + settings.transitionId + ")";
        String namespace = settings.namespace != null ? settings.namespace : podNamespace();
        GateRuntime rt;
        try {
            rt = new GateRuntime(
                    settings,
                    stores.create(namespace, settings.configMapName),
                    label,
                    System::currentTimeMillis);
            rt.start("bluegreen-gate-" + task.getIndexOfThisSubtask());
        } catch (IOException e) {
            throw new IllegalStateException(
                    "blue/green " + label + ": cannot read the ConfigMap " + namespace + "/"
                            + settings.configMapName + ": " + e.getMessage(),
                    e);
        }
        runtime = rt;
        getRuntimeContext().getMetricGroup().gauge(HAND_OVER_GAUGE, (Gauge<Integer>) rt::handOverDone);
    }

    private static String podNamespace() {
        Path file = Paths.get(KubernetesConfigMapStore.SERVICE_ACCOUNT_DIR, "namespace");
        try {
            String ns = new String(Files.readAllBytes(file), StandardCharsets.UTF_8).trim();
            if (!ns.isEmpty()) {
                return ns;
            }
        } catch (IOException ignored) {
            // Reported below.
        }
        throw new IllegalStateException(
                "blue/green gate: the job's configuration has no " + GateSettings.NAMESPACE
                        + " and " + file + " cannot be read: set " + GateSettings.NAMESPACE
                        + " to the namespace of the ConfigMap");
    }

    /** The state the gate decides from (null when it passes everything or is not open). */
    GateState currentState() {
        GateRuntime rt = runtime;
        return rt == null ? null : rt.state();
    }

    @Override
    public void processElement(T value, Context ctx, Collector<T> out) throws Exception {
        GateRuntime rt = runtime;
        if (rt == null) {
            out.collect(value);
            return;
        }
        if (rt.decide(eventTime.eventTime(value), ctx.timerService().currentWatermark())) {
            out.collect(value);
        }
    }

    @Override
    public void close() throws Exception {
        GateRuntime rt = runtime;
        runtime = null;
        if (rt != null) {
            rt.close();
        }
        super.close();
    }
}
