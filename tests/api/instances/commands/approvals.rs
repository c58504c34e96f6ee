//! Approvals listed and decided on another instance.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_listed_and_decided_on_another_instance() {
    run_on(Backend::Postgres, |db| async move {
        let routes = Router::new().route(
            "/deploy",
            routing::post(|| async { Json(json!({"ok": true})) }),
        );
        let tool = Target::serve("127.0.0.1", routes).await;
        let mock = MockProvider::start(MockConfig {
            latency: Duration::from_millis(50),
            answer_tokens: 5,
            tool_iterations: 1,
            tool: "deploy".into(),
            tool_args: "{}".into(),
            ..MockConfig::default()
        })
        .await
        .unwrap();
        let env = [("REAGENT_HTTP_ALLOW_PRIVATE", "true")];
        let mut cluster = Cluster::start(3, &db, &mock.base_url(), &env).await;
        let config = format!(
            "[[tools.http]]\nname = \"deploy\"\ndescription = \"deploys\"\nurl = \"{}\"\n\
             requires_approval = true\n",
            tool.url("/deploy")
        );
        for i in 0..3 {
            std::fs::write(cluster.dir(i).join("config.toml"), &config).unwrap();
            cluster.restart(i).await;
        }
        let (a, b, c) = (cluster.at(0), cluster.at(1), cluster.at(2));
        for (approve, decider) in [(true, b), (false, c)] {
            let (_, run) = a.start_run("ship it").await;
            let seen = until(a, &run, |e| e.label() == "step:approval_required").await;
            let id = seen.last().unwrap().data["approval_id"]
                .as_str()
                .unwrap()
                .to_string();
            let listed: Value = get(decider, "/api/approvals").await.json().await.unwrap();
            let listed = listed.as_array().unwrap();
            assert!(
                listed
                    .iter()
                    .any(|p| p["id"] == id.as_str() && p["run_id"] == run.as_str()),
                "listed on another instance: {listed:?}"
            );
            let path = format!("/api/approvals/{id}");
            let r = post(
                decider,
                &path,
                json!({"approve": approve, "reason": "policy"}),
            )
            .await;
            assert_eq!(r.status(), 200);
            let r = post(a, &path, json!({"approve": true})).await;
            assert_eq!(
                error_code(r, 404).await,
                "not_found",
                "decided once, everywhere"
            );
            let all = read_all(events(c, &run).await).await;
            assert_eq!(all.last().unwrap().data["status"], "completed");
            let end = all.iter().find(|e| e.label() == "step:tool_end").unwrap();
            assert_eq!(end.data["blocked"], !approve, "{:?}", end.data);
            let left: Value = get(b, "/api/approvals").await.json().await.unwrap();
            assert_eq!(left, json!([]));
        }
        assert_eq!(tool.hits(), 1, "only the approved call ran");
        mock.shutdown().await;
    })
    .await;
}
