//! The process's own metrics, read from `/proc` on each scrape under the names every
//! Prometheus client uses (`process_*`), and the build's version
//! (`flink_operator_build_info`): what a dashboard shows of any service, and what tells two
//! rolled-out versions apart.

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{counter::ConstCounter, family::Family, gauge::ConstGauge, gauge::Gauge},
    registry::Registry,
};

/// The kernel reports process times in USER_HZ, 100 a second on Linux.
const TICKS_PER_SECOND: f64 = 100.0;

/// Registers the process metrics and the build info into `registry`.
pub fn register(registry: &mut Registry) {
    registry.register_collector(Box::new(ProcessCollector));
    let build: Family<Vec<(String, String)>, Gauge> = Family::default();
    build
        .get_or_create(&vec![(
            "version".to_owned(),
            env!("CARGO_PKG_VERSION").to_owned(),
        )])
        .set(1);
    registry.register(
        "flink_operator_build_info",
        "1, labelled with the version of the running operator",
        build,
    );
}

/// What `/proc` says of this process.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: f64,
    pub resident_bytes: i64,
    pub virtual_bytes: i64,
    pub start_time_seconds: f64,
    pub open_fds: Option<i64>,
    pub max_fds: Option<i64>,
}

impl ProcessStats {
    /// Reads them; None off Linux or when `/proc` does not answer.
    pub fn read() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok()?;
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let mut stats = parse(&stat, &boot, &limits)?;
        stats.open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|entries| i64::try_from(entries.count()).unwrap_or(i64::MAX));
        Some(stats)
    }
}

/// The stats in `/proc/self/stat`, `/proc/stat` (the boot time) and `/proc/self/limits`.
pub fn parse(stat: &str, boot: &str, limits: &str) -> Option<ProcessStats> {
    // The command name (field 2) may hold spaces and parentheses: the fields after it start
    // after its last `)`.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 3.. of proc(5): utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
    let page_size = 4096.0;
    let boot_time = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|t| t.trim().parse::<f64>().ok())?;
    let max_fds = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<i64>().ok());
    Some(ProcessStats {
        cpu_seconds: (field(14)? + field(15)?) / TICKS_PER_SECOND,
        start_time_seconds: boot_time + field(22)? / TICKS_PER_SECOND,
        virtual_bytes: field(23)? as i64,
        resident_bytes: (field(24)? * page_size) as i64,
        open_fds: None,
        max_fds,
    })
}

#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stats) = ProcessStats::read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(stats.cpu_seconds);
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            "User and system CPU time of the operator process",
            None,
            cpu.metric_type(),
        )?)?;
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory of the operator process",
                Some(stats.resident_bytes as f64),
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory of the operator process",
                Some(stats.virtual_bytes as f64),
            ),
            (
                "process_start_time_seconds",
                "When the operator process started, in seconds since the Unix epoch",
                Some(stats.start_time_seconds),
            ),
            (
                "process_open_fds",
                "Open file descriptors of the operator process",
                stats.open_fds.map(|n| n as f64),
            ),
            (
                "process_max_fds",
                "The operator process's limit of open file descriptors",
                stats.max_fds.map(|n| n as f64),
            ),
        ];
        for (name, help, value) in gauges {
            let Some(value) = value else {
                continue;
            };
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_reads_into_process_stats() {
        // A command name with a space and a parenthesis, as proc(5) allows.
        let stat = "4242 (flink-op (x)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 \
                    12 0 500000 104857600 6400 18446744073709551615";
        let boot = "cpu  1 2 3\nbtime 1796600000\nprocesses 10\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1048576              1048576              files\n";
        let stats = parse(stat, boot, limits).unwrap();
        assert_eq!(stats.cpu_seconds, 3.0, "250 + 50 ticks");
        assert_eq!(stats.start_time_seconds, 1_796_600_000.0 + 5_000.0);
        assert_eq!(stats.virtual_bytes, 104_857_600);
        assert_eq!(stats.resident_bytes, 6400 * 4096);
        assert_eq!(stats.max_fds, Some(1_048_576));
        assert_eq!(parse("garbage", boot, limits), None);
    }

    #[test]
    fn the_registry_serves_the_process_and_build_metrics() {
        let mut registry = Registry::default();
        register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for name in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_open_fds ",
            "process_start_time_seconds ",
        ] {
            assert!(text.contains(name), "{name}: {text}");
        }
        assert!(
            text.contains(&format!(
                "flink_operator_build_info{{version=\"{}\"}} 1",
                env!("CARGO_PKG_VERSION")
            )),
            "{text}"
        );
    }
}
