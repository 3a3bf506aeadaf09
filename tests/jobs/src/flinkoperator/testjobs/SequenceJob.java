package flinkoperator.testjobs;

import flinkoperator.bluegreen.WatermarkGate;
import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.OutputFileConfig;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.sink.filesystem.rollingpolicies.OnCheckpointRollingPolicy;

/**
 * The job of the exactly-once proof of ADVANCED blue/green transitions: ids 0, 1, 2, ... from
 * one source subtask, each with an event time, through the blue/green record gate to a file
 * sink that commits on checkpoints. Each output line is {@code COLOUR,id,eventTime}.
 *
 * <p>Event time of id n: {@code base + n * step}; every 10th id is 1 s older (out of order
 * within the 2 s bound of the watermark), every id with n % 100 == 50 is 120 s older (late).
 *
 * <p>Arguments (all optional): {@code --rate R} ids per second (default 50), {@code --out DIR}
 * (default /opt/flink/state/output), {@code --step-ms S} (default 100), {@code --base-ms B}
 * (default 1700000000000). Compiles against Flink 1.18 to 2.x (the file sink's classes are in
 * every distribution's lib).
 */
public final class SequenceJob {

    /** How far out of order every 10th id is, within the watermark's bound. */
    static final long OUT_OF_ORDER_MS = 1_000;
    /** How late every id with n % 100 == 50 is. */
    static final long LATE_MS = 120_000;

    private SequenceJob() {}

    public static void main(String[] args) throws Exception {
        double rate = 50;
        String out = "/opt/flink/state/output";
        long step = 100;
        long base = 1_700_000_000_000L;
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + flag);
            }
            String value = args[++i];
            switch (flag) {
                case "--rate":
                    rate = Double.parseDouble(value);
                    break;
                case "--out":
                    out = value;
                    break;
                case "--step-ms":
                    step = Long.parseLong(value);
                    break;
                case "--base-ms":
                    base = Long.parseLong(value);
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument " + flag);
            }
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        ReadableConfig config = env.getConfiguration();
        String colour =
                config.get(
                        ConfigOptions.key("bluegreen.active-deployment-type")
                                .stringType()
                                .defaultValue("NONE"));

        EventTime eventTime = new EventTime(base, step);
        DataStream<Tuple2<Long, Long>> ids =
                env.fromSource(
                                new KeyedCounterJob.RateLimitedSequence(rate),
                                WatermarkStrategy.<Long>forBoundedOutOfOrderness(
                                                Duration.ofSeconds(2))
                                        .withTimestampAssigner((id, ts) -> eventTime.of(id)),
                                "ids")
                        .uid("ids")
                        .setParallelism(1)
                        .map(eventTime, Types.TUPLE(Types.LONG, Types.LONG))
                        .uid("event-time")
                        .setParallelism(1)
                        .rebalance();

        DataStream<Tuple2<Long, Long>> gated =
                WatermarkGate.apply(ids, config, (Tuple2<Long, Long> record) -> record.f1);

        FileSink<String> sink =
                FileSink.forRowFormat(new Path(out), new SimpleStringEncoder<String>("UTF-8"))
                        .withBucketAssigner(new BasePathBucketAssigner<>())
                        .withRollingPolicy(OnCheckpointRollingPolicy.build())
                        .withOutputFileConfig(
                                OutputFileConfig.builder()
                                        .withPartPrefix("part-" + colour.toLowerCase())
                                        .withPartSuffix(".csv")
                                        .build())
                        .build();
        gated.map(record -> colour + "," + record.f0 + "," + record.f1, Types.STRING)
                .uid("format")
                .sinkTo(sink)
                .uid("files");

        env.execute("sequence");
    }

    /** The event time of each id, and (id, event time) records. */
    static final class EventTime
            implements org.apache.flink.api.common.functions.MapFunction<Long, Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private final long base;
        private final long step;

        EventTime(long base, long step) {
            this.base = base;
            this.step = step;
        }

        long of(long id) {
            long time = base + id * step;
            if (id % 100 == 50) {
                return time - LATE_MS;
            }
            if (id % 10 == 0) {
                return time - OUT_OF_ORDER_MS;
            }
            return time;
        }

        @Override
        public Tuple2<Long, Long> map(Long id) {
            return Tuple2.of(id, of(id));
        }
    }
}
