use super::*;

#[test]
fn reads_this_process() {
    let pid = std::process::id();
    let (rss, hwm) = memory_kib(pid).expect("status readable");
    assert!(rss > 0 && hwm >= rss, "{rss} {hwm}");
    assert!(cpu_seconds(pid).expect("stat readable") >= 0.0);
    assert!(raise_fd_limit() > 0);
}

#[test]
fn stat_cpu_is_utime_plus_stime_after_the_command_name() {
    // Fields 14 and 15 (utime 1234, stime 56); the command name holds spaces and a ')'.
    let stat = "4242 (reagent (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 56 0 0 20 0 9 0 77 1000 200";
    assert_eq!(stat_cpu_ticks(stat), Some(1290));
    assert_eq!(stat_cpu_ticks("4242 (reagent) S 1 2 3"), None);
    assert_eq!(stat_cpu_ticks("no parenthesis at all"), None);
    assert_eq!(stat_cpu_ticks("1 (a) S 1 1 1 0 -1 0 0 0 0 0 x 5 0 0"), None);
}

#[test]
fn machine_ticks_count_all_but_idle_and_iowait() {
    let stat = "cpu  100 5 20 800 10 3 2 7 0 0\ncpu0 50 2 10 400 5 1 1 3 0 0\n";
    // busy = 100 + 5 + 20 + 3 + 2 + 7; total adds idle 800 and iowait 10.
    assert_eq!(machine_ticks(stat), Some((137, 947)));
    assert_eq!(machine_ticks("intr 1 2 3\n"), None);
    assert_eq!(machine_ticks("cpu  1 x 3 4\n"), None);
}
