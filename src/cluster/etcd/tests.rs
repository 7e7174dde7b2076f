//! The wire format and the backend against an unreachable store.

use super::*;

#[test]
fn cadence_follows_the_ttl() {
    assert_eq!(period_for(3), Duration::from_secs(1));
    assert_eq!(period_for(15), Duration::from_secs(5));
    assert_eq!(round_deadline_for(3), Duration::from_secs(1));
    assert_eq!(round_deadline_for(15), Duration::from_secs(9));
    assert_eq!(round_deadline_for(10).as_millis(), 5666);
}

#[test]
fn the_campaign_is_create_if_absent_bound_to_the_lease() {
    let body = campaign_body("cronstable/leader", "a", 7587);
    assert_eq!(body["compare"][0]["target"], "CREATE");
    assert_eq!(body["compare"][0]["create_revision"], "0");
    assert_eq!(body["compare"][0]["key"], "Y3JvbnN0YWJsZS9sZWFkZXI=");
    assert_eq!(body["success"][0]["requestPut"]["value"], "YQ==");
    assert_eq!(body["success"][0]["requestPut"]["lease"], "7587");
    assert_eq!(
        body["failure"][0]["requestRange"]["key"],
        "Y3JvbnN0YWJsZS9sZWFkZXI="
    );
}

#[test]
fn a_lost_campaign_reads_the_holder_and_its_lease() {
    let answer = json!({
        "header": {"revision": "9"},
        "responses": [{"response_range": {"kvs": [{
            "key": "Y3JvbnN0YWJsZS9sZWFkZXI=", "value": "Yg==", "lease": "42"
        }], "count": "1"}}]
    });
    let (succeeded, kv) = campaign_outcome(&answer);
    assert!(!succeeded);
    assert_eq!(
        kv,
        Some(KeyValue {
            lease: 42,
            value: Some("b".to_owned())
        })
    );
    let won = json!({"succeeded": true, "responses": [{"response_put": {}}]});
    assert_eq!(campaign_outcome(&won), (true, None));
}

#[test]
fn a_keepalive_without_a_positive_ttl_means_the_lease_is_gone() {
    assert_eq!(
        keepalive_ttl(&json!({"result": {"ID": "1", "TTL": "3"}})),
        Some(3)
    );
    assert_eq!(keepalive_ttl(&json!({"result": {"ID": "1"}})), None);
    assert_eq!(
        keepalive_ttl(&json!({"result": {"ID": "1", "TTL": "-1"}})),
        None
    );
    assert_eq!(keepalive_ttl(&json!({"result": {"TTL": 0}})), None);
}

#[test]
fn an_undecodable_value_is_an_unknown_holder_not_no_holder() {
    let range = json!({"kvs": [{"value": "%%%", "lease": "5"}]});
    let kv = first_kv(&range).expect("a key");
    assert_eq!(kv.lease, 5);
    assert_eq!(kv.value, None);
    assert_eq!(first_kv(&json!({"count": "0"})), None);
}

#[test]
fn record_writes_compare_the_mod_revision_and_read_back_on_a_lost_race() {
    let body = cas_body("cronstable/leader/reboot-ran", "{}", 0);
    assert_eq!(body["compare"][0]["target"], "MOD");
    assert_eq!(body["compare"][0]["mod_revision"], "0");
    assert_eq!(body["success"][0]["requestPut"]["value"], "e30=");
    assert!(
        body["success"][0]["requestPut"].get("lease").is_none(),
        "not bound to the election lease: a revoke keeps it"
    );
    assert_eq!(cas_outcome(&json!({"succeeded": true})), Ok(()));
    let lost = json!({"responses": [{"response_range": {"kvs": [{
        "key": "eA==", "value": "e30=", "mod_revision": "41"
    }]}}]});
    assert_eq!(
        cas_outcome(&lost),
        Err(Versioned {
            value: Some("{}".to_owned()),
            mod_revision: 41
        })
    );
    // Lost against a deleted key: absent, revision 0.
    assert_eq!(
        cas_outcome(&json!({"responses": [{"response_range": {}}]})),
        Err(Versioned {
            value: None,
            mod_revision: 0
        })
    );
}

fn settings(ttl: u64) -> EtcdSettings {
    EtcdSettings {
        endpoints: vec!["http://127.0.0.1:1/".to_owned()],
        election_name: "cronstable/leader".to_owned(),
        ttl,
        username: None,
        password: None,
        ca: None,
        cert: None,
        key: None,
    }
}

#[tokio::test]
async fn a_smaller_granted_ttl_is_honoured_and_never_raised() {
    let mut lease = EtcdLease::connect(&settings(15), "a".into(), Duration::from_secs(10))
        .await
        .expect("backend");
    lease.narrow_ttl(6);
    assert_eq!(lease.effective_ttl, 6);
    assert_eq!(lease.period(), Duration::from_secs(2));
    lease.narrow_ttl(60);
    assert_eq!(lease.effective_ttl, 15);
    lease.narrow_ttl(0);
    assert_eq!(lease.effective_ttl, 1);
    assert!(lease.ttl_collapsed);
}

#[tokio::test]
async fn an_unreachable_store_fails_the_round_and_keeps_no_leadership() {
    let mut lease = EtcdLease::connect(&settings(3), "a".into(), Duration::from_secs(1))
        .await
        .expect("backend");
    let round = lease.round().await;
    assert!(!round.answered);
    assert_eq!(round.leading_until, None);
    let error = round.error.expect("an error");
    assert!(error.contains("all etcd endpoints failed"), "{error}");
    assert_eq!(lease.lease_view()["leaseId"], Value::Null);
}

#[tokio::test]
async fn a_username_needs_a_password_and_tls_files_must_load() {
    let mut s = settings(3);
    s.username = Some("root".to_owned());
    let err = EtcdLease::connect(&s, "a".into(), Duration::from_secs(1))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&err, BackendError::Setup(why) if why.contains("no password is configured")),
        "{err}"
    );
    let mut s = settings(3);
    s.ca = Some("/nonexistent/ca.pem".to_owned());
    let err = EtcdLease::connect(&s, "a".into(), Duration::from_secs(1))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&err, BackendError::Setup(why)
            if why.starts_with("cluster.etcd.tls.ca /nonexistent/ca.pem could not be read")),
        "{err}"
    );
}

#[test]
fn errors_keep_the_wording_the_log_lines_show() {
    let down = EtcdError::AllEndpointsFailed {
        last: "http://e:2379/v3/kv/range: HTTP 503 busy".to_owned(),
    };
    assert_eq!(
        down.to_string(),
        "all etcd endpoints failed: http://e:2379/v3/kv/range: HTTP 503 busy"
    );
    assert_eq!(
        EtcdError::Authentication(Box::new(down)).to_string(),
        "authentication failed: all etcd endpoints failed: http://e:2379/v3/kv/range: HTTP 503 \
         busy"
    );
    assert_eq!(
        EtcdError::Unauthorized {
            url: "http://e:2379/v3/kv/range".to_owned(),
            body: "{\"error\":\"invalid auth token\"}".to_owned(),
        }
        .to_string(),
        "http://e:2379/v3/kv/range: 401 {\"error\":\"invalid auth token\"}"
    );
    assert_eq!(
        EtcdError::NoToken.to_string(),
        "authentication failed: etcd returned no token"
    );
    assert_eq!(
        BackendError::NoAnswer(Duration::from_secs(5)).to_string(),
        "no answer within 5 s"
    );
}
