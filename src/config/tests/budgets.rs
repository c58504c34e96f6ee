//! `price` on `[[models]]`, `[[budgets]]` and `max_active_runs_per_tenant`: read, and every
//! mistake a start-up error naming its key (a mistyped price must never reach a run).

use super::*;

#[test]
fn prices_budgets_and_the_run_cap_are_read() {
    let c = load(
        Some(
            r#"
[server]
max_active_runs_per_tenant = 3

[[models]]
name = "m"
price = { input = 2.5, output = 10, cache_read = 1.25 }

[[budgets]]
tenant = "*"
window = "day"
tokens = 100000

[[budgets]]
tenant = "alice"
window = "month"
cost_usd = 12.5
warn_at_percent = 90
"#,
        ),
        &[],
    )
    .unwrap();
    let price = c.models[0].price.unwrap();
    assert_eq!(
        (
            price.input,
            price.output,
            price.cache_read,
            price.cache_write
        ),
        (2.5, 10.0, 1.25, 0.0)
    );
    assert_eq!(c.server.max_active_runs_per_tenant, Some(3));
    assert_eq!(c.budgets.len(), 2);
    assert_eq!(
        (c.budgets[0].window, c.budgets[0].warn_at_percent),
        (BudgetWindow::Day, 80)
    );
    assert_eq!(c.budgets[1].cost_usd, Some(12.5));
}

/// `check-config` and the start-up log show what a tenant may spend: each model's price (or
/// that it has none) and each budget with its limits and run cap.
#[test]
fn the_summary_lists_prices_and_budgets() {
    let c = load(
        Some(
            r#"
[server]
max_active_runs_per_tenant = 3

[[models]]
name = "m"
price = { input = 2.5, output = 10 }

[[models]]
name = "free"

[[budgets]]
tenant = "*"
window = "day"
tokens = 100000

[[budgets]]
tenant = "alice"
window = "month"
cost_usd = 12.5
warn_at_percent = 90
"#,
        ),
        &[],
    )
    .unwrap();
    let s = c.summary();
    let line = |name: &str| {
        s.lines()
            .find(|l| l.contains(&format!(" {name}: ")))
            .unwrap_or_else(|| panic!("{name} in {s}"))
            .to_string()
    };
    assert!(
        line("m").contains("price $2.5 in / $10 out / $0 cache read / $0 cache write per M"),
        "{s}"
    );
    assert!(line("free").contains("no price"), "{s}");
    assert!(s.contains("budgets (3 runs at once per tenant):"), "{s}");
    assert!(s.contains("  * day: 100000 tokens, warn at 80 %"), "{s}");
    assert!(s.contains("  alice month: $12.5, warn at 90 %"), "{s}");
    let none = load(None, &[]).unwrap().summary();
    assert!(none.contains("budgets: none"), "{none}");
}

#[test]
fn a_mistyped_price_fails_start_up_naming_the_key() {
    let model = |price: &str| format!("[[models]]\nname = \"m\"\nprice = {price}\n");
    let e = err(Some(&model("{ input = -1 }")), &[]);
    assert!(e.contains("models[0].price.input"), "{e}");
    let e = err(Some(&model("{ output = nan }")), &[]);
    assert!(e.contains("models[0].price.output"), "{e}");
    let e = err(Some(&model("{ cache_write = inf }")), &[]);
    assert!(e.contains("models[0].price.cache_write"), "{e}");
    let e = err(Some(&model("{ input = \"2.5\" }")), &[]);
    assert!(e.contains("price"), "{e}");
    let e = err(Some(&model("{ inptu = 1 }")), &[]);
    assert!(e.contains("inptu"), "{e}");
}

#[test]
fn budget_mistakes_name_their_key() {
    let budget = |body: &str| format!("[[budgets]]\ntenant = \"*\"\n{body}\n");
    let e = err(Some(&budget("window = \"day\"")), &[]);
    assert!(e.contains("budgets[0]") && e.contains("tokens"), "{e}");
    let e = err(Some(&budget("window = \"day\"\ncost_usd = -5")), &[]);
    assert!(e.contains("budgets[0].cost_usd"), "{e}");
    let e = err(
        Some(&budget("window = \"day\"\ntokens = 5\nwarn_at_percent = 0")),
        &[],
    );
    assert!(e.contains("budgets[0].warn_at_percent"), "{e}");
    let e = err(Some(&budget("window = \"year\"\ntokens = 5")), &[]);
    assert!(e.contains("year"), "{e}");
    let twice = format!(
        "{}{}",
        budget("window = \"day\"\ntokens = 5"),
        budget("window = \"day\"\ntokens = 9")
    );
    let e = err(Some(&twice), &[]);
    assert!(e.contains("budgets[1].window"), "{e}");
    let e = err(Some("[server]\nmax_active_runs_per_tenant = 0\n"), &[]);
    assert!(e.contains("server.max_active_runs_per_tenant"), "{e}");
}
