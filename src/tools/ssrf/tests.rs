use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn forbidden_ipv4_ranges() {
    for s in [
        "0.0.0.0",
        "0.1.2.3",
        "10.0.0.1",
        "10.255.255.255",
        "100.64.0.1",
        "100.127.255.254",
        "127.0.0.1",
        "127.0.0.2",
        "127.255.255.255",
        "169.254.0.1",
        "169.254.169.254",
        "172.16.0.1",
        "172.31.255.255",
        "192.0.0.8",
        "192.0.2.1",
        "192.88.99.1",
        "192.168.0.1",
        "192.168.255.255",
        "198.18.0.1",
        "198.19.255.255",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
    ] {
        assert!(is_forbidden(ip(s)), "{s} should be forbidden");
    }
}

#[test]
fn public_ipv4_allowed() {
    for s in [
        "1.1.1.1",
        "8.8.8.8",
        "9.255.255.255",
        "11.0.0.1",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.1",
        "169.253.1.1",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.1.1",
        "192.167.1.1",
        "198.17.255.255",
        "198.20.0.0",
        "223.255.255.255",
    ] {
        assert!(!is_forbidden(ip(s)), "{s} should be allowed");
    }
}

#[test]
fn forbidden_ipv6_ranges() {
    for s in [
        "::",
        "::1",
        "fe80::1",
        "febf::1",
        "fec0::1",
        "fc00::1",
        "fd00:ec2::254",
        "fdff:ffff::1",
        "ff02::1",
        "ff05::1:3",
        "2001:db8::1",
        "2001::1",
        "2001:2::1",
        "3fff::1",
        "100::1",
        "64:ff9b:1::1",
    ] {
        assert!(is_forbidden(ip(s)), "{s} should be forbidden");
    }
}

#[test]
fn ipv6_embedding_forbidden_ipv4_is_forbidden() {
    for s in [
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "::ffff:192.168.1.1",
        "::ffff:0.0.0.0",
        "::ffff:7f00:1",
        "::127.0.0.1",
        "::10.0.0.1",
        "::169.254.169.254",
        "64:ff9b::127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2002:7f00:1::",
        "2002:a00:1::1",
        "2002:a9fe:a9fe::1",
    ] {
        assert!(is_forbidden(ip(s)), "{s} should be forbidden");
    }
}

#[test]
fn public_ipv6_allowed() {
    for s in [
        "2606:4700:4700::1111",
        "2001:4860:4860::8888",
        "2a00:1450:4007:80e::200e",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
        "2001:200::1",
    ] {
        assert!(!is_forbidden(ip(s)), "{s} should be allowed");
    }
}

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[tokio::test]
async fn literal_and_encoded_private_hosts_are_refused() {
    let policy = SsrfPolicy::default();
    for s in [
        "http://127.0.0.1/",
        "http://10.0.0.1:8080/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[fd00:ec2::254]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0/",
        "http://localhost/",
    ] {
        let err = resolve_checked(&url(s), &policy).await.unwrap_err();
        match err {
            ToolError::Refused(m) => assert!(m.contains("private/loopback"), "{s}: {m}"),
            other => panic!("{s}: expected Refused, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn schemes_and_credentials_are_refused_even_when_private_is_allowed() {
    let policy = SsrfPolicy {
        allow_private: true,
        allowed_hosts: vec![],
    };
    for s in [
        "file:///etc/passwd",
        "ftp://example.com/",
        "gopher://127.0.0.1:25/",
        "http://user:pw@127.0.0.1/",
        "http://user@127.0.0.1/",
    ] {
        assert!(
            matches!(
                resolve_checked(&url(s), &policy).await,
                Err(ToolError::Refused(_))
            ),
            "{s}"
        );
    }
}

#[tokio::test]
async fn allow_private_and_allowed_hosts_let_loopback_through() {
    let open = SsrfPolicy {
        allow_private: true,
        allowed_hosts: vec![],
    };
    let addrs = resolve_checked(&url("http://127.0.0.1:9/"), &open)
        .await
        .unwrap();
    assert_eq!(addrs, vec!["127.0.0.1:9".parse().unwrap()]);

    let listed = SsrfPolicy {
        allow_private: false,
        allowed_hosts: vec!["127.0.0.1:9".into(), "[::1]".into()],
    };
    assert!(resolve_checked(&url("http://127.0.0.1:9/"), &listed)
        .await
        .is_ok());
    // Another port of a host:port entry stays refused.
    assert!(resolve_checked(&url("http://127.0.0.1:10/"), &listed)
        .await
        .is_err());
    // A bare host entry allows every port.
    assert!(resolve_checked(&url("http://[::1]:1234/"), &listed)
        .await
        .is_ok());
    // A neighbour address is not covered.
    assert!(resolve_checked(&url("http://127.0.0.2:9/"), &listed)
        .await
        .is_err());
}

#[tokio::test]
async fn public_literal_is_accepted_without_network() {
    let addrs = resolve_checked(&url("https://8.8.8.8/dns"), &SsrfPolicy::default())
        .await
        .unwrap();
    assert_eq!(addrs, vec!["8.8.8.8:443".parse().unwrap()]);
}
