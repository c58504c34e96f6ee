//! Server CPU and memory from `/proc/<pid>` (Linux).

use std::time::Instant;

/// Clock ticks per second for `/proc/<pid>/stat` times.
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime + stime of `pid`, in seconds.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at state (field 3).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks_per_s())
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

/// Raises the soft open-file limit to the hard limit (children inherit it).
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
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let pid = std::process::id();
        let (rss, hwm) = memory_kib(pid).expect("status readable");
        assert!(rss > 0 && hwm >= rss, "{rss} {hwm}");
        assert!(cpu_seconds(pid).expect("stat readable") >= 0.0);
        assert!(raise_fd_limit() > 0);
    }
}
