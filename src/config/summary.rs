//! A human-readable summary of a loaded configuration for `reagent check-config` and the
//! start-up log. It shows whether keys are set, never the keys themselves, and hides the
//! database password.

use std::fmt::Write;

use super::{redact_url, Config};

// Writing to a String cannot fail, hence the ignored `writeln!` results.

impl Config {
    /// A multi-line summary without secrets, one part per section.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        self.write_server(&mut out);
        self.write_auth(&mut out);
        self.write_models(&mut out);
        self.write_budgets(&mut out);
        self.write_react(&mut out);
        self.write_dag(&mut out);
        self.write_tools(&mut out);
        out
    }

    /// Bind, database, UI, limits and connection settings.
    fn write_server(&self, out: &mut String) {
        let s = &self.server;
        let _ = writeln!(*out, "bind: {}", s.bind);
        let _ = writeln!(*out, "database: {}", redact_url(&s.database_url));
        let _ = match &s.static_dir {
            None => writeln!(*out, "ui: compiled into the binary"),
            Some(dir) => writeln!(*out, "ui: folder {} (REAGENT_STATIC_DIR)", dir.display()),
        };
        let _ = writeln!(
            *out,
            "limits: body {} bytes, query {} chars, images {} bytes a run, rate limit {}",
            s.max_body_bytes,
            s.max_query_chars,
            s.max_run_image_bytes,
            s.rate_limit_per_minute
                .map_or("off".to_string(), |n| format!("{n}/min per key")),
        );
        let _ = writeln!(
            *out,
            "connections: header timeout {} s, stall timeout {} s, cap {}",
            s.header_timeout_s,
            s.sse_stall_s,
            s.max_connections
                .map_or("from the file limit".to_string(), |n| n.to_string()),
        );
    }

    /// Whether auth is on, and for which tenants.
    fn write_auth(&self, out: &mut String) {
        let tenants: Vec<&str> = self.auth.keys.iter().map(|k| k.name.as_str()).collect();
        let _ = writeln!(
            *out,
            "auth: {}{}",
            if tenants.is_empty() {
                "off".to_string()
            } else {
                format!("on ({} keys: {})", tenants.len(), tenants.join(", "))
            },
            if self.auth.metrics_key.is_some() {
                "; /metrics has its own key"
            } else {
                ""
            },
        );
    }

    /// The LLM client settings and every model.
    fn write_models(&self, out: &mut String) {
        let _ = writeln!(
            *out,
            "llm: timeout {} s, {} retries",
            self.llm.timeout_s, self.llm.max_retries
        );
        let _ = writeln!(*out, "models (default: {}):", self.default_model);
        for m in &self.models {
            let a = m.abilities;
            let _ = writeln!(
                *out,
                "  {} {}: {} at {} [tool_call={} json_mode={} json_schema={} tool_choice={}] window {} / output {}, key {}, {}{}",
                if m.default { "*" } else { "-" },
                m.name,
                m.model,
                m.base_url,
                a.tool_call,
                a.json_mode,
                a.json_schema,
                a.tool_choice,
                m.context_window,
                m.max_output_tokens,
                if m.api_key.is_some() { "set" } else { "not set" },
                m.price.map_or("no price".to_string(), |p| format!(
                    "price ${} in / ${} out / ${} cache read / ${} cache write per M",
                    p.input, p.output, p.cache_read, p.cache_write
                )),
                if m.hints.is_empty() {
                    String::new()
                } else {
                    format!(", hints: {}", m.hints.join(", "))
                },
            );
            if !m.roles.is_empty() {
                let _ = writeln!(*out, "    roles: {}", m.roles.join(", "));
            }
        }
    }

    /// What each tenant may spend: `[[budgets]]` and the run cap (prices are on the models).
    fn write_budgets(&self, out: &mut String) {
        let cap = self
            .server
            .max_active_runs_per_tenant
            .map_or(String::new(), |n| format!(" ({n} runs at once per tenant)"));
        if self.budgets.is_empty() {
            let _ = writeln!(*out, "budgets: none{cap}");
            return;
        }
        let _ = writeln!(*out, "budgets{cap}:");
        for b in &self.budgets {
            let limits: Vec<String> = b
                .tokens
                .map(|t| format!("{t} tokens"))
                .into_iter()
                .chain(b.cost_usd.map(|c| format!("${c}")))
                .collect();
            let _ = writeln!(
                *out,
                "  {} {}: {}, warn at {} %",
                b.tenant,
                b.window.as_str(),
                limits.join(" and "),
                b.warn_at_percent
            );
        }
    }

    /// The engine settings.
    fn write_react(&self, out: &mut String) {
        let r = &self.react;
        let _ = writeln!(
            *out,
            "react: max_iterations {}, tool selection above {} tools (max {}), reflection every {}, \
             cycle threshold {}, completion check {} (min {} tools), synthesis truncation {}, \
             context budget {}, tool timeout {} s, native tools {}{}\n  \
             tool calls: {} per reply, {} per run; synthesis trace at most {} bytes",
            r.max_iterations,
            r.tool_selection_threshold,
            r.tool_selection_max,
            r.self_reflection_interval,
            r.cycle_detection_threshold,
            if r.completion_check { "on" } else { "off" },
            r.completion_check_min_tools,
            r.synthesis_truncation,
            r.context_budget_tokens
                .map_or("model window - max output".to_string(), |n| n.to_string()),
            r.tool_timeout_s,
            r.use_native_tools,
            r.compact_model
                .as_ref()
                .map_or(String::new(), |m| format!(", compact model {m}")),
            r.max_tool_calls_per_reply,
            r.max_tool_calls_per_run,
            r.synthesis_max_bytes,
        );
    }

    /// DAG mode.
    fn write_dag(&self, out: &mut String) {
        let d = &self.dag;
        let _ = writeln!(
            *out,
            "dag: default engine {}, max {} steps, {} at once, step {} iterations / {} s, \
             {} re-plans below confidence {}, {} rounds",
            d.default_engine,
            d.max_steps,
            d.max_concurrency,
            d.step_max_iterations,
            d.step_timeout_s,
            d.max_replans,
            d.replan_stop_confidence,
            d.max_rounds,
        );
    }

    /// HTTP tools and hooks.
    fn write_tools(&self, out: &mut String) {
        let tools: Vec<&str> = self.tools.http.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(
            *out,
            "tools: http [{}], private addresses {}, {} calls at once ({} per run)",
            tools.join(", "),
            if self.tools.allow_private_http {
                "allowed"
            } else {
                "refused"
            },
            self.tools.max_concurrent,
            self.tools.max_concurrent_per_run,
        );
        let hooks: Vec<String> = self
            .hooks
            .iter()
            .map(|h| match &h.name {
                Some(name) => format!("{name} ({})", h.kind),
                None => h.kind.clone(),
            })
            .collect();
        let _ = writeln!(*out, "hooks: [{}]", hooks.join(", "));
        let agents: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        let _ = writeln!(*out, "agents: [{}]", agents.join(", "));
        // Names and transports only: env and header values may be secrets.
        let mcp: Vec<String> = self
            .mcp
            .iter()
            .map(|m| {
                format!(
                    "{} ({}{}{})",
                    m.name,
                    m.transport(),
                    if m.required { ", required" } else { "" },
                    // Worth seeing at a glance: this server gets reagent's secrets.
                    if m.inherit_env {
                        ", inherits the environment"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        let _ = writeln!(*out, "mcp: [{}]", mcp.join(", "));
        // Names and origins only: header values and URL queries may be secrets.
        let a2a: Vec<String> = self
            .a2a
            .iter()
            .map(|a| {
                let origin = url::Url::parse(&a.url)
                    .map(|u| u.origin().ascii_serialization())
                    .unwrap_or_default();
                format!("{} ({origin})", a.name)
            })
            .collect();
        let _ = writeln!(*out, "a2a: [{}]", a2a.join(", "));
    }
}
