use std::collections::HashMap;

use crate::config::Config;

fn load(toml: &str, vars: &[(&str, &str)]) -> Result<Config, String> {
    let env: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::load_from(Some(toml), &env).map_err(|e| e.to_string())
}

#[test]
fn a_stdio_and_an_http_server_with_expanded_secrets() {
    let c = load(
        "[[mcp]]\nname = \"files\"\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\nenv = { T = \"${FT}\" }\n\
         [[mcp]]\nname = \"web\"\nurl = \"http://127.0.0.1:3001/mcp\"\nheaders = { Authorization = \"Bearer ${WT}\" }\nrequired = true\n",
        &[("FT", "files-secret"), ("WT", "web-secret")],
    )
    .unwrap();
    assert_eq!(c.mcp[0].env["T"], "files-secret");
    assert_eq!(c.mcp[1].headers["Authorization"], "Bearer web-secret");
    assert_eq!(c.mcp[0].timeout_s, 60);
    let shown = format!("{:?}\n{}", c.mcp, c.summary());
    assert!(
        !shown.contains("files-secret") && !shown.contains("web-secret"),
        "{shown}"
    );
    assert!(shown.contains("web (http, required)"), "{shown}");
}

#[test]
fn errors_name_the_key() {
    let cases = [
        (
            "[[mcp]]\nname = \"Bad Name\"\ncommand = \"x\"\n",
            "mcp[0].name",
        ),
        ("[[mcp]]\nname = \"a\"\n", "mcp[0].command"),
        (
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
            "mcp[0].url",
        ),
        ("[[mcp]]\nname = \"a\"\nurl = \"ftp://h\"\n", "mcp[0].url"),
        (
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\ntimeout_s = 0\n",
            "mcp[0].timeout_s",
        ),
        (
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nwrites = [\"[\"]\n",
            "mcp[0].writes[0]",
        ),
        (
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\n[[mcp]]\nname = \"a\"\ncommand = \"y\"\n",
            "mcp[1].name",
        ),
        (
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nheaders = { A = \"b\" }\n",
            "mcp[0].headers",
        ),
        (
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nbogus = 1\n",
            "bogus",
        ),
        (
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\nenv = { K = \"${UNSET_VAR}\" }\n",
            "UNSET_VAR",
        ),
    ];
    for (toml, key) in cases {
        let e = load(toml, &[]).unwrap_err();
        assert!(e.contains(key), "{toml:?}: {e}");
    }
}

#[test]
fn http_tool_headers_and_hook_urls_expand_too() {
    let c = load(
        "[[tools.http]]\nname = \"w\"\ndescription = \"d\"\nurl = \"http://h/x\"\nheaders = { K = \"${HK}\" }\n\
         [[hooks]]\nkind = \"webhook\"\nurl = \"http://${HOST}/hook?t=${HT}\"\n",
        &[("HK", "hk"), ("HOST", "policy.local"), ("HT", "tok")],
    )
    .unwrap();
    assert_eq!(c.tools.http[0].headers["K"], "hk");
    assert_eq!(
        c.hooks[0].url.as_deref(),
        Some("http://policy.local/hook?t=tok")
    );
    let e = load(
        "[[hooks]]\nkind = \"webhook\"\nurl = \"http://h/${NOPE}\"\n",
        &[],
    )
    .unwrap_err();
    assert!(e.contains("hooks[0].url") && e.contains("NOPE"), "{e}");
}

#[test]
fn inherit_env_is_off_by_default_and_only_for_stdio() {
    let c = load(
        "[[mcp]]\nname = \"a\"\ncommand = \"x\"\n[[mcp]]\nname = \"b\"\ncommand = \"y\"\ninherit_env = true\n",
        &[],
    )
    .unwrap();
    assert!(!c.mcp[0].inherit_env);
    assert!(c.mcp[1].inherit_env);
    let shown = c.summary();
    assert!(
        shown.contains("a (stdio)") && shown.contains("b (stdio, inherits the environment)"),
        "{shown}"
    );
    let e = load(
        "[[mcp]]\nname = \"w\"\nurl = \"http://127.0.0.1:1/mcp\"\ninherit_env = true\n",
        &[],
    )
    .unwrap_err();
    assert!(e.contains("mcp[0].inherit_env"), "{e}");
}
