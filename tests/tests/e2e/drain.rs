//! Draining and rolling restarts on Postgres and Redis, with the roles in
//! three processes (gateway; scheduler, delivery and memory; pipeline): a
//! pipeline process stopped with SIGTERM in the middle of a job lets its
//! provider calls in flight come back, stores what they translated, hands
//! the job back and exits 0, and another pipeline process takes the job over
//! at once (long before its lease would expire) without sending a passage
//! again; then, under a stream of requests, each process is stopped with
//! SIGTERM and replaced in turn, and every accepted request still completes,
//! none is lost or made twice, and no passage is paid for twice. On one
//! process, a long poll answers at SIGTERM, and a second SIGTERM stops a
//! drain held up by a hanging call at once, with an exit code that says so.
//! A pipeline process cut off from the scheduler (not from the provider)
//! starts no call once its lease may pass to another worker, so the worker
//! that takes the job over sends no passage a second time.

use dragoman_e2e::server::ServerBuilder;
use dragoman_e2e::translation::{FINAL_STATUSES, chapter_from, paragraphs, tail};
use dragoman_e2e::{
    Api, Backend, Installation, RetryingClient, SCOPES, Server, Session, Simulator, eventually,
};
use dragoman_testing::env::cluster_urls;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Three processes of one installation, their simulated provider and a
/// token with every scope.
struct Cluster {
    installation: Arc<Installation>,
    simulator: Simulator,
    services: Server,
    pipeline: Server,
    gateway: Server,
    token: String,
    provider_id: String,
}

impl Cluster {
    /// `None` when the test is skipped (no Postgres and Redis outside CI).
    async fn start(test: &str, lease_seconds: u64, latency_ms: u64) -> Option<Cluster> {
        let (database, redis) = cluster_urls(test)?;
        let installation = Installation::cluster(&database, &redis).await;
        let latency = latency_ms.to_string();
        let flags = ["--latency-ms", latency.as_str()];
        let (simulator, services) = tokio::join!(
            Simulator::start(&flags),
            services_builder(&installation).start()
        );
        let pipeline = pipeline_builder(&installation, &services, lease_seconds)
            .start()
            .await;
        let gateway = gateway_builder(&installation, &services, &pipeline)
            .start()
            .await;
        let provider_id = installation
            .add_simulator_provider(&simulator.openai_base_url(), &["--capacity", "8"])
            .await;
        let account = installation.create_user("drainer", false).await;
        let token = Session::login(&gateway, &account)
            .await
            .token("drain", &SCOPES)
            .await
            .token;
        Some(Cluster {
            installation,
            simulator,
            services,
            pipeline,
            gateway,
            token,
            provider_id,
        })
    }

    /// A request of `chapters` chapters of `paragraphs` passages on its own
    /// series, in quality `fast`: every provider call is a translation.
    fn payload(&self, series: &str, chapters: u32, count: usize) -> Value {
        let chapters: Vec<Value> = (1..=chapters)
            .map(|n| chapter_from(n, &paragraphs(series, n, count)))
            .collect();
        json!({
            "series": {"name": series, "create_if_missing": true},
            "volume": {"number": 1},
            "source_language": "en",
            "target_language": "fr",
            "provider_id": self.provider_id,
            "pipeline": {"threads": 3, "quality": "fast"},
            "chapters": chapters,
        })
    }

    /// A client of the one gateway that retries through its restarts (a
    /// submission with the same `Idempotency-Key`) for up to a minute.
    fn client(&self) -> RetryingClient {
        RetryingClient::new(
            vec![self.gateway.base().to_owned()],
            self.token.clone(),
            Duration::from_secs(60),
        )
    }

    /// Stops `process` with SIGTERM and expects a clean exit (code 0)
    /// within the lease.
    async fn stop(process: &mut Server, name: &str, lease_seconds: u64) {
        let (status, _) = process.terminate(Duration::from_secs(lease_seconds)).await;
        assert_eq!(
            status.code(),
            Some(0),
            "{name} after SIGTERM: {status}\nstderr (end):\n{}",
            tail(&process.stderr(), 6000)
        );
    }

    /// Provider calls received, and those answered.
    async fn calls(&self) -> (u64, u64) {
        let stats = self.simulator.stats().await;
        let count = |key: &str| stats[key].as_u64().unwrap_or(0);
        let answered = [
            "bad_requests",
            "ok",
            "cut_at_max_tokens",
            "rate_limited",
            "server_errors",
            "hangs",
            "malformed",
            "truncated",
            "refusals",
            "dropped_placeholders",
        ]
        .iter()
        .map(|k| count(k))
        .sum();
        (count("requests"), answered)
    }

    /// Passages with a stored translation.
    async fn translated(&self) -> u64 {
        count(
            &self.installation,
            "SELECT COUNT(*) FROM passages WHERE translation IS NOT NULL",
        )
        .await
    }

    /// Waits until provider calls are in flight.
    async fn calls_in_flight(&self) {
        eventually(Duration::from_secs(60), "calls in flight", || async {
            let (received, answered) = self.calls().await;
            (received > answered).then_some(())
        })
        .await;
    }

    /// Every passage id the simulator was sent, with how many times.
    async fn passages_sent(&self) -> HashMap<String, u32> {
        let mut sent = HashMap::new();
        for message in self.simulator.translation_messages().await {
            for passage in message["passages"].as_array().expect("passages") {
                let id = passage["id"].as_str().expect("passage id").to_owned();
                *sent.entry(id).or_default() += 1;
            }
        }
        sent
    }

    /// The simulator's calls are all translations, each passage was sent
    /// once, and the reports' usage counts every call: nothing was paid
    /// twice, nothing unpaid.
    async fn check_paid_once(&self, reports: &[Value], passages: u64) {
        let (received, answered) = self.calls().await;
        assert_eq!(received, answered, "calls still in flight at the end");
        let usage: u64 = reports
            .iter()
            .map(|r| r["usage"]["calls"].as_u64().expect("usage.calls"))
            .sum();
        assert_eq!(
            usage, received,
            "usage.calls of the reports vs calls the provider received"
        );
        let sent = self.passages_sent().await;
        let twice: Vec<(&String, &u32)> = sent.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "passages sent more than once: {twice:?}");
        assert_eq!(sent.len() as u64, passages, "every passage sent once");
        assert_eq!(received, passages, "one passage per call");
    }
}

fn services_builder(installation: &Arc<Installation>) -> ServerBuilder {
    Server::builder(installation.clone()).roles("scheduler,delivery,memory")
}

/// One passage per call, so that calls count passages.
fn pipeline_builder(
    installation: &Arc<Installation>,
    services: &Server,
    lease_seconds: u64,
) -> ServerBuilder {
    Server::builder(installation.clone())
        .roles("pipeline")
        .env(
            "DRAGOMAN_SERVICES_URL",
            &format!("http://{}", services.grpc_addr()),
        )
        .env("DRAGOMAN_LEASE_SECONDS", &lease_seconds.to_string())
        .env("DRAGOMAN_BATCH_TOKENS", "1")
}

fn gateway_builder(
    installation: &Arc<Installation>,
    services: &Server,
    pipeline: &Server,
) -> ServerBuilder {
    Server::builder(installation.clone())
        .roles("gateway")
        .env(
            "DRAGOMAN_SERVICES_URL",
            &format!("http://{}", services.grpc_addr()),
        )
        .env(
            "DRAGOMAN_PIPELINE_URL",
            &format!("http://{}", pipeline.grpc_addr()),
        )
}

/// Waits until the provider received a few more calls than `after`.
async fn under_load(simulator: &Simulator, after: u64) {
    eventually(Duration::from_secs(60), "calls go on", || async {
        (simulator.requests().await >= after + 4).then_some(())
    })
    .await;
}

async fn count(installation: &Installation, sql: &str) -> u64 {
    let db = installation.sql().await;
    let statement = Statement::from_string(db.get_database_backend(), sql.to_owned());
    let row = db
        .query_one_raw(statement)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .expect("one row");
    let n: i64 = row.try_get_by_index(0).expect("a count");
    let _ = db.close().await;
    u64::try_from(n).expect("a count is not negative")
}

#[tokio::test]
async fn sigterm_mid_job_stores_the_calls_in_flight_and_hands_the_job_over() {
    // A lease far longer than the test waits for the takeover: only a job
    // handed back explicitly can be taken over in time.
    const LEASE: u64 = 60;
    const CHAPTERS: u32 = 4;
    const PARAGRAPHS: usize = 12;
    let Some(mut cluster) = Cluster::start(
        "drain::sigterm_mid_job_stores_the_calls_in_flight_and_hands_the_job_over",
        LEASE,
        1000,
    )
    .await
    else {
        return;
    };
    let client = cluster.client();
    let body = cluster.payload("Drained", CHAPTERS, PARAGRAPHS);
    let id = client.submit(&body, "drained-1").await;
    // One call each.
    let passages = u64::from(CHAPTERS) * PARAGRAPHS as u64;

    // Some passages translated, and calls in flight right now.
    eventually(
        Duration::from_secs(60),
        "passages translated with calls in flight",
        || async {
            let (received, answered) = cluster.calls().await;
            (answered >= 3 && received > answered).then_some(())
        },
    )
    .await;
    let (received_at_term, _) = cluster.calls().await;
    Cluster::stop(&mut cluster.pipeline, "the pipeline", LEASE).await;

    // What it sent came back and is stored: no paid call was abandoned.
    let (sent_at_exit, answered_at_exit) = cluster.calls().await;
    let translated_at_exit = cluster.translated().await;
    assert!(sent_at_exit >= received_at_term);
    assert_eq!(
        sent_at_exit, answered_at_exit,
        "calls still in flight after the pipeline exited"
    );
    assert_eq!(
        translated_at_exit, sent_at_exit,
        "every call the stopped process made has its translation stored"
    );
    assert!(
        translated_at_exit < passages,
        "stopped too late: {translated_at_exit} of {passages} translated"
    );

    // Another pipeline process takes the job over at once: the job ends
    // well before its lease (renewed a third of a lease ago at most, so
    // expiring 40 to 60 s after the stop) would have let anyone take it.
    cluster.pipeline = pipeline_builder(&cluster.installation, &cluster.services, LEASE)
        .listen_as(&cluster.pipeline)
        .start()
        .await;
    let doc = client
        .wait_final(
            &id,
            tokio::time::Instant::now() + Duration::from_secs(LEASE * 2 / 3),
        )
        .await;
    assert_eq!(
        doc["status"],
        "completed",
        "{doc}\npipeline stderr (end):\n{}",
        tail(&cluster.pipeline.stderr(), 4000)
    );
    assert_eq!(doc["report"]["passages"]["translated"], passages);
    // After the takeover only the passages without a translation were
    // sent.
    cluster
        .check_paid_once(&[doc["report"].clone()], passages)
        .await;
}

#[tokio::test]
async fn a_rolling_restart_under_load_loses_nothing_and_pays_nothing_twice() {
    // Short enough that a job let go while the services restart (its
    // memory unreachable) is taken over soon; longer than a restart.
    const LEASE: u64 = 20;
    const CHAPTERS: u32 = 2;
    const PARAGRAPHS: usize = 3;
    const LEAST: usize = 10;
    const MOST: usize = 30;
    let Some(mut cluster) = Cluster::start(
        "drain::a_rolling_restart_under_load_loses_nothing_and_pays_nothing_twice",
        LEASE,
        250,
    )
    .await
    else {
        return;
    };
    let client = cluster.client();

    // A stream of requests, one every 500 ms until the restarts are done
    // and at least `LEAST` were sent.
    let (done_tx, mut done) = watch::channel(false);
    let bodies: Vec<Value> = (1..=MOST)
        .map(|n| cluster.payload(&format!("Rolling {n}"), CHAPTERS, PARAGRAPHS))
        .collect();
    let submitter = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut accepted = Vec::new();
            for (n, body) in bodies.iter().enumerate() {
                if *done.borrow() && accepted.len() >= LEAST {
                    break;
                }
                accepted.push(client.submit(body, &format!("rolling-{n}")).await);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    _ = done.changed() => {}
                }
            }
            accepted
        })
    };

    // Each process in turn, while provider calls are in flight: SIGTERM, a
    // clean exit within the lease, a new process on the same addresses,
    // and the work goes on.
    cluster.calls_in_flight().await;
    let sent = cluster.simulator.requests().await;
    Cluster::stop(&mut cluster.gateway, "the gateway", LEASE).await;
    cluster.gateway = gateway_builder(&cluster.installation, &cluster.services, &cluster.pipeline)
        .listen_as(&cluster.gateway)
        .start()
        .await;
    under_load(&cluster.simulator, sent).await;

    cluster.calls_in_flight().await;
    let sent = cluster.simulator.requests().await;
    Cluster::stop(
        &mut cluster.services,
        "scheduler, delivery and memory",
        LEASE,
    )
    .await;
    cluster.services = services_builder(&cluster.installation)
        .listen_as(&cluster.services)
        .start()
        .await;
    under_load(&cluster.simulator, sent).await;

    cluster.calls_in_flight().await;
    let sent = cluster.simulator.requests().await;
    Cluster::stop(&mut cluster.pipeline, "the pipeline", LEASE).await;
    cluster.pipeline = pipeline_builder(&cluster.installation, &cluster.services, LEASE)
        .listen_as(&cluster.pipeline)
        .start()
        .await;
    under_load(&cluster.simulator, sent).await;

    done_tx.send_replace(true);
    let accepted = submitter.await.expect("the submitter");
    assert!(accepted.len() >= LEAST, "only {} requests", accepted.len());

    // Every accepted request completes, once.
    let mut reports = Vec::new();
    for id in &accepted {
        let doc = client
            .wait_final(id, tokio::time::Instant::now() + Duration::from_secs(90))
            .await;
        assert_eq!(
            doc["status"],
            "completed",
            "{doc}\npipeline stderr (end):\n{}",
            tail(&cluster.pipeline.stderr(), 4000)
        );
        reports.push(doc["report"].clone());
    }
    let mut distinct = accepted.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), accepted.len(), "one request per key");
    assert_eq!(
        count(&cluster.installation, "SELECT COUNT(*) FROM requests").await,
        accepted.len() as u64,
        "a retried submission made no second request"
    );
    let per_request = u64::from(CHAPTERS) * PARAGRAPHS as u64;
    cluster
        .check_paid_once(&reports, per_request * accepted.len() as u64)
        .await;
}

#[tokio::test]
async fn a_long_poll_answers_at_sigterm_and_a_second_sigterm_cuts_a_hanging_call() {
    let mut api = Api::builder(Backend::Sqlite)
        .simulator(&["--rate-hang", "1"])
        .env("DRAGOMAN_PROVIDER_TIMEOUT_SECONDS", "300")
        // A drain deadline of 40 s, and a lease that would keep the job
        // from anyone else for 40 s at least.
        .env("DRAGOMAN_LEASE_SECONDS", "60")
        .start()
        .await;
    let mut body = api.payload("Hanging", vec![chapter_from(1, &paragraphs("Hang", 1, 3))]);
    body["pipeline"] = json!({"quality": "fast"});
    let id = api.submit_ok(&body).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    eventually(Duration::from_secs(60), "a call hangs", || async {
        (api.simulator.stats().await["hangs"].as_u64() >= Some(1)).then_some(())
    })
    .await;

    // A long poll, waiting when the process is told to stop. It is made
    // with a token of its own, never used before: a token's first use is
    // stamped before its call goes on, so once the token shows as used the
    // poll is in the server, past authentication, on its way to waiting.
    let session = api.session().await;
    let poller = session.token("long poll", &SCOPES).await;
    let poll = tokio::spawn(
        api.server
            .client()
            .get(
                api.server
                    .url(&format!("/api/v1/translation-requests/{id}?wait=60")),
            )
            .bearer_auth(&poller.token)
            .send(),
    );
    eventually(
        Duration::from_secs(30),
        "the long poll in the server",
        || async {
            let (_, tokens) = session.list_tokens().await;
            tokens
                .iter()
                .any(|t| t["id"] == poller.id.as_str() && !t["last_used_at"].is_null())
                .then_some(())
        },
    )
    .await;
    assert!(
        !poll.is_finished(),
        "the long poll answered before the stop"
    );
    let pid = api.server.pid().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(sent.success());
    // It answers with the document as it is, which the client polls again;
    // the hanging call keeps the process draining meanwhile.
    let answer = poll
        .await
        .expect("the poll")
        .expect("the long poll is answered, not cut off");
    assert_eq!(answer.status().as_u16(), 200);
    let doc: Value = answer.json().await.expect("a status document");
    assert!(
        doc["status"]
            .as_str()
            .is_some_and(|s| !FINAL_STATUSES.contains(&s)),
        "{doc}"
    );

    // The second SIGTERM stops it long before the drain deadline would,
    // and the exit code says the hanging call was abandoned.
    let (status, _) = api.server.terminate(Duration::from_secs(15)).await;
    let stderr = api.server.stderr();
    assert_eq!(status.code(), Some(1), "{status}\n{}", tail(&stderr, 4000));
    assert!(stderr.contains("cut short"), "{}", tail(&stderr, 4000));

    // The job was handed back: a new process takes it over at once.
    api.restart().await;
    eventually(Duration::from_secs(20), "the job taken over", || async {
        let hangs = api.simulator.stats().await["hangs"].as_u64().unwrap_or(0);
        (hangs >= 2).then_some(())
    })
    .await;
}

/// A TCP relay to one address that can be cut as a network partition
/// would: the connections through it dropped, new ones closed at once.
struct Relay {
    addr: SocketAddr,
    cut: watch::Sender<bool>,
}

impl Relay {
    async fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("relay");
        let addr = listener.local_addr().expect("relay address");
        let (cut, cut_rx) = watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if *cut_rx.borrow() {
                    continue;
                }
                let mut cut = cut_rx.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.wait_for(|c| *c) => {}
                    }
                });
            }
        });
        Relay { addr, cut }
    }

    fn cut(&self) {
        self.cut.send_replace(true);
    }
}

#[tokio::test]
async fn a_worker_cut_off_from_the_scheduler_stops_its_calls_before_its_lease_can_pass() {
    const LEASE: u64 = 6;
    const CHAPTERS: u32 = 4;
    const PARAGRAPHS: usize = 30;
    let Some(mut cluster) = Cluster::start(
        "drain::a_worker_cut_off_from_the_scheduler_stops_its_calls_before_its_lease_can_pass",
        LEASE,
        300,
    )
    .await
    else {
        return;
    };
    // The cluster's pipeline gives way to one that reaches the scheduler
    // through the relay, the memory and delivery roles directly.
    Cluster::stop(&mut cluster.pipeline, "the pipeline", LEASE).await;
    let relay = Relay::start(cluster.services.grpc_addr()).await;
    cluster.pipeline = pipeline_builder(&cluster.installation, &cluster.services, LEASE)
        .env("DRAGOMAN_SCHEDULER_URL", &format!("http://{}", relay.addr))
        .listen_as(&cluster.pipeline)
        .start()
        .await;
    let client = cluster.client();
    let body = cluster.payload("Partitioned", CHAPTERS, PARAGRAPHS);
    let id = client.submit(&body, "partitioned-1").await;
    let passages = u64::from(CHAPTERS) * PARAGRAPHS as u64;
    under_load(&cluster.simulator, 0).await;

    // The partition: the worker keeps its provider and its database, loses
    // the scheduler. Another pipeline process, which reaches it, takes the
    // job over once the lease runs out unrenewed.
    relay.cut();
    let taker = pipeline_builder(&cluster.installation, &cluster.services, LEASE)
        .start()
        .await;
    let doc = client
        .wait_final(&id, tokio::time::Instant::now() + Duration::from_secs(120))
        .await;
    assert_eq!(
        doc["status"],
        "completed",
        "{doc}\ntaker stderr (end):\n{}",
        tail(&taker.stderr(), 4000)
    );
    assert_eq!(doc["report"]["passages"]["translated"], passages);
    let cut_off = cluster.pipeline.stderr();
    assert!(
        cut_off.contains("no provider call starts any more"),
        "the cut-off worker never stopped its calls:\n{}",
        tail(&cut_off, 4000)
    );
    // Its calls in flight came back within the margin (four times a
    // call's latency) and were stored before the lease could pass: the
    // worker that took over sent none of them again.
    let sent = cluster.passages_sent().await;
    let twice: Vec<(&String, &u32)> = sent.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "passages sent more than once after the takeover: {twice:?}"
    );
    assert_eq!(sent.len() as u64, passages, "every passage sent");
    drop(taker);
}
