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
fn an_agent_with_expanded_headers_and_defaults() {
    let c = load(
        "[[a2a]]\nname = \"weather\"\nurl = \"https://agents.example.com/weather\"\n\
         headers = { Authorization = \"Bearer ${WT}\" }\n",
        &[("WT", "weather-secret")],
    )
    .unwrap();
    assert_eq!(c.a2a[0].headers["Authorization"], "Bearer weather-secret");
    assert_eq!(c.a2a[0].timeout_s, 120);
    assert_eq!(c.a2a[0].description, None);
    let shown = format!("{:?}\n{}", c.a2a, c.summary());
    assert!(!shown.contains("weather-secret"), "{shown}");
    assert!(shown.contains("weather"), "{shown}");
}

#[test]
fn errors_name_the_key() {
    let cases = [
        ("[[a2a]]\nname = \"has space\"\nurl = \"http://h\"\n", "a2a[0].name"),
        ("[[a2a]]\nname = \"a\"\n", "missing field `url`"),
        ("[[a2a]]\nname = \"a\"\nurl = \"ftp://h/x\"\n", "a2a[0].url"),
        ("[[a2a]]\nname = \"a\"\nurl = \"http://u:p@h/x\"\n", "a2a[0].url"),
        ("[[a2a]]\nname = \"a\"\nurl = \"http://h\"\ntimeout_s = 0\n", "a2a[0].timeout_s"),
        ("[[a2a]]\nname = \"a\"\nurl = \"http://h\"\nheaders = { \"bad name\" = \"v\" }\n", "a2a[0].headers"),
        ("[[a2a]]\nname = \"a\"\nurl = \"http://h\"\ndescription = \" \"\n", "a2a[0].description"),
        ("[[a2a]]\nname = \"a\"\nurl = \"http://h\"\nsecret = 1\n", "unknown field `secret`"),
        (
            "[[a2a]]\nname = \"a\"\nurl = \"http://h\"\n[[a2a]]\nname = \"a\"\nurl = \"http://g\"\n",
            "a2a[1].name",
        ),
        ("[[a2a]]\nname = \"a\"\nurl = \"http://h\"\nheaders = { X = \"${NOPE}\" }\n", "NOPE"),
    ];
    for (toml, key) in cases {
        let err = load(toml, &[]).unwrap_err();
        assert!(err.contains(key), "{toml}: {err}");
    }
}

#[test]
fn a_header_value_that_expands_to_a_line_break_is_refused() {
    let err = load(
        "[[a2a]]\nname = \"a\"\nurl = \"http://h\"\nheaders = { X = \"${V}\" }\n",
        &[("V", "one\r\ntwo")],
    )
    .unwrap_err();
    assert!(err.contains("a2a[0].headers.X"), "{err}");
}
