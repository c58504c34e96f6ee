//! Server CPU and memory from `/proc/<pid>` (Linux).

use std::time::Instant;

/// Clock ticks per second for `/proc/<pid>/stat` times.
#[allow(unsafe_code)] // sysconf: libc, no safe wrapper in our dependencies.
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime + stime of `pid`, in seconds: every thread of the process, including threads that
/// already exited (the kernel adds those to the process's own line, which the sum over
/// `/proc/<pid>/task/*/stat` would miss).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat_cpu_ticks(&stat)? as f64 / ticks_per_s())
}

/// utime + stime, in clock ticks, of one `/proc/<pid>/stat` (or `task/<tid>/stat`) line.
pub fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after the command name (which may contain spaces and ')') start at state (field 3).
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// CPU use of a process between `start` and `stop`.
pub struct CpuMeter {
    pid: u32,
    cpu0: f64,
    t0: Instant,
}

impl CpuMeter {
    pub fn start(pid: u32) -> CpuMeter {
        CpuMeter {
            pid,
            cpu0: cpu_seconds(pid).unwrap_or(0.0),
            t0: Instant::now(),
        }
    }

    /// (CPU seconds used, share of one core in percent).
    pub fn stop(&self) -> (f64, f64) {
        let used = cpu_seconds(self.pid).unwrap_or(self.cpu0) - self.cpu0;
        let wall = self.t0.elapsed().as_secs_f64().max(1e-9);
        (used, 100.0 * used / wall)
    }
}

/// `(busy, total)` clock ticks of the whole machine (all cores) from `/proc/stat`'s `cpu` line:
/// busy is everything but `idle` and `iowait`.
fn machine_ticks(stat: &str) -> Option<(u64, u64)> {
    let fields = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = fields
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((total.saturating_sub(idle), total))
}

/// The machine's `(busy, total)` clock ticks now (see [`MachineMeter`]).
pub fn read_machine_ticks() -> Option<(u64, u64)> {
    machine_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Busy share between two `(busy, total)` readings, percent (0 when no time passed).
pub fn busy_pct(from: (u64, u64), to: (u64, u64)) -> f64 {
    let total = to.1.saturating_sub(from.1);
    if total == 0 {
        return 0.0;
    }
    100.0 * to.0.saturating_sub(from.0) as f64 / total as f64
}

/// How busy the whole machine was between `start` and `stop`: the server, the load generator,
/// the mock and anything else. Near 100 % the latency figures measure queues, not a path.
pub struct MachineMeter {
    start: Option<(u64, u64)>,
}

impl MachineMeter {
    pub fn start() -> MachineMeter {
        MachineMeter {
            start: read_machine_ticks(),
        }
    }

    /// Busy share of all cores, in percent (0 when `/proc/stat` is unreadable).
    pub fn stop(&self) -> f64 {
        match (self.start, read_machine_ticks()) {
            (Some(from), Some(to)) => busy_pct(from, to),
            _ => 0.0,
        }
    }
}

/// Raises the soft open-file limit to the hard limit (children inherit it).
#[allow(unsafe_code)] // getrlimit/setrlimit: libc, no safe wrapper in our dependencies.
pub fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to an rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 0;
        }
        if lim.rlim_cur < lim.rlim_max {
            let want = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                return want.rlim_cur;
            }
        }
    }
    lim.rlim_cur
}

#[cfg(test)]
mod tests;
