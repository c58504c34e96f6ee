use super::default_out;

#[test]
fn a_partial_run_does_not_overwrite_the_whole_suites_json() {
    assert_eq!(
        default_out(&[]),
        std::path::Path::new("target/benchmarks.json")
    );
    let only = vec!["throughput".to_string()];
    assert_eq!(
        default_out(&only),
        std::path::Path::new("target/benchmarks-only.json")
    );
}
