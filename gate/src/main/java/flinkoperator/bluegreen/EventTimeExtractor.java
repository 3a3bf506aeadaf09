package flinkoperator.bluegreen;

import java.io.Serializable;

/**
 * Tells the gate a record's event time, the same time the job's watermarks are made from.
 *
 * @param <T> the record type
 */
@FunctionalInterface
public interface EventTimeExtractor<T> extends Serializable {
    /**
     * @return the record's event time in epoch milliseconds, or {@code null} when it has none (such
     *     a record counts as older than any cutover point)
     */
    Long eventTime(T record);
}
