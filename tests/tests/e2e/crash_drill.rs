//! A crash drill on Postgres and Redis: a cluster of seven processes (two
//! gateways, a scheduler, a delivery and a memory process, two pipelines)
//! translates a stream of small books with a final webhook each while, for
//! a while, a process picked at random is stopped with SIGKILL every few
//! seconds and started again at once on the same addresses. Every request
//! still completes, its final webhook reaches the receiver (a repeat is the
//! same event sent again, never a second one), and no passage is sent to the
//! provider twice except one whose call was cut by the SIGKILL of the
//! pipeline that made it: such a call never came back, so its passage has no
//! translation and must be sent again.
//!
//! `DRAGOMAN_DRILL_BOOKS` (default 20) and `DRAGOMAN_DRILL_SECONDS` (default
//! 60) size the drill; `DRAGOMAN_DRILL_SEED` replays one. The figures are
//! printed on stdout (`bench/crash_drill.sh` runs the long drill).

use dragoman_e2e::receiver::{Call, Receiver};
use dragoman_e2e::server::ServerBuilder;
use dragoman_e2e::translation::{chapter_from, paragraphs, tail};
use dragoman_e2e::{Installation, RetryingClient, SCOPES, Server, Session, Simulator};
use dragoman_testing::env::cluster_urls;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longer than a restart, short enough that a job held by a killed
/// pipeline is taken over soon.
const LEASE: u64 = 15;
const CHAPTERS: u32 = 2;
const PARAGRAPHS: usize = 3;
const LATENCY_MS: &str = "600";
/// Global signing secret (at least 32 characters).
const WEBHOOK_SECRET: &str = "crash-drill-webhook-signing-secret-0123456789";

/// The roles of the drill's processes, one entry per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Gateway,
    Scheduler,
    Delivery,
    Memory,
    Pipeline,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Gateway => "gateway",
            Role::Scheduler => "scheduler",
            Role::Delivery => "delivery",
            Role::Memory => "memory",
            Role::Pipeline => "pipeline",
        }
    }
}

/// The gRPC addresses every process keeps through restarts.
#[derive(Clone, Copy)]
struct Addresses {
    scheduler: SocketAddr,
    delivery: SocketAddr,
    memory: SocketAddr,
    pipeline: SocketAddr,
}

/// How to start a process of `role`: webhooks to the local receiver allowed
/// and signed with a global secret; one passage per call, so that calls
/// count passages.
fn builder(installation: &Arc<Installation>, role: Role, to: Option<Addresses>) -> ServerBuilder {
    let mut builder = Server::builder(installation.clone())
        .roles(role.name())
        .env("API_WEBHOOK_HOSTS", "127.0.0.1")
        .env("API_WEBHOOK_PRIVATE_NETWORKS", "127.0.0.0/8")
        .env("API_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("DRAGOMAN_LEASE_SECONDS", &LEASE.to_string())
        .env("DRAGOMAN_BATCH_TOKENS", "1");
    if let Some(to) = to {
        let url = |addr: SocketAddr| format!("http://{addr}");
        builder = builder
            .env("DRAGOMAN_SCHEDULER_URL", &url(to.scheduler))
            .env("DRAGOMAN_DELIVERY_URL", &url(to.delivery))
            .env("DRAGOMAN_MEMORY_URL", &url(to.memory));
        if role == Role::Gateway {
            builder = builder.env("DRAGOMAN_PIPELINE_URL", &url(to.pipeline));
        }
    }
    builder
}

/// One process of the drill.
struct Process {
    role: Role,
    server: Server,
}

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v}: not a number ({e})")),
        _ => default,
    }
}

/// Every translation call's passages, with the call's arrival number.
async fn sends(simulator: &Simulator) -> HashMap<String, Vec<u64>> {
    let mut sent: HashMap<String, Vec<u64>> = HashMap::new();
    for prompt in simulator.prompts().await {
        if prompt["kind"] != "translation" {
            continue;
        }
        let n = prompt["n"].as_u64().expect("prompt number");
        let user: Value = serde_json::from_str(prompt["user"].as_str().expect("user message"))
            .expect("a protocol message is JSON");
        for passage in user["passages"].as_array().expect("passages") {
            let id = passage["id"].as_str().expect("passage id").to_owned();
            sent.entry(id).or_default().push(n);
        }
    }
    for ns in sent.values_mut() {
        ns.sort_unstable();
    }
    sent
}

fn stderr_tails(processes: &[Process]) -> String {
    processes
        .iter()
        .map(|p| {
            format!(
                "--- {} stderr (end):\n{}\n",
                p.role.name(),
                tail(&p.server.stderr(), 3000)
            )
        })
        .collect()
}

#[tokio::test]
async fn a_cluster_under_sigkill_completes_every_book() {
    let test = "crash_drill::a_cluster_under_sigkill_completes_every_book";
    let Some((database, redis)) = cluster_urls(test) else {
        return;
    };
    let books = env_number("DRAGOMAN_DRILL_BOOKS", 20);
    let seconds = env_number("DRAGOMAN_DRILL_SECONDS", 60);
    let seed = env_number(
        "DRAGOMAN_DRILL_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    );
    println!(
        "crash drill: seed={seed} (DRAGOMAN_DRILL_SEED replays it) books={books} seconds={seconds}"
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let setup = Instant::now();

    let installation = Installation::cluster(&database, &redis).await;
    let receiver = Receiver::start().await;
    let simulator = Simulator::start(&["--latency-ms", LATENCY_MS]).await;
    let scheduler = builder(&installation, Role::Scheduler, None).start().await;
    let delivery = builder(&installation, Role::Delivery, None).start().await;
    let memory = builder(&installation, Role::Memory, None).start().await;
    let partial = Addresses {
        scheduler: scheduler.grpc_addr(),
        delivery: delivery.grpc_addr(),
        memory: memory.grpc_addr(),
        pipeline: scheduler.grpc_addr(),
    };
    let pipeline_a = builder(&installation, Role::Pipeline, Some(partial))
        .start()
        .await;
    let pipeline_b = builder(&installation, Role::Pipeline, Some(partial))
        .start()
        .await;
    let addresses = Addresses {
        pipeline: pipeline_a.grpc_addr(),
        ..partial
    };
    let gateway_a = builder(&installation, Role::Gateway, Some(addresses))
        .start()
        .await;
    let gateway_b = builder(&installation, Role::Gateway, Some(addresses))
        .start()
        .await;
    let provider_id = installation
        .add_simulator_provider(&simulator.openai_base_url(), &["--capacity", "8"])
        .await;
    let account = installation.create_user("driller", false).await;
    let token = Session::login(&gateway_a, &account)
        .await
        .token("drill", &SCOPES)
        .await
        .token;
    // A refused connection, a cut answer or a 5xx is tried again on the
    // other gateway: two minutes cover a restart of both.
    let client = RetryingClient::new(
        vec![gateway_a.base().to_owned(), gateway_b.base().to_owned()],
        token,
        Duration::from_secs(120),
    );
    let mut processes: Vec<Process> = [
        (Role::Gateway, gateway_a),
        (Role::Gateway, gateway_b),
        (Role::Scheduler, scheduler),
        (Role::Delivery, delivery),
        (Role::Memory, memory),
        (Role::Pipeline, pipeline_a),
        (Role::Pipeline, pipeline_b),
    ]
    .into_iter()
    .map(|(role, server)| Process { role, server })
    .collect();
    // The wall time is the drill's, from the first submission.
    println!(
        "crash drill: cluster up in {:.1}s",
        setup.elapsed().as_secs_f64()
    );
    let started = Instant::now();

    // The books go in over the first half of the drill, through the kills.
    let bodies: Vec<Value> = (1..=books)
        .map(|n| {
            let series = format!("Drill {n}");
            let chapters: Vec<Value> = (1..=CHAPTERS)
                .map(|c| chapter_from(c, &paragraphs(&series, c, PARAGRAPHS)))
                .collect();
            json!({
                "series": {"name": series, "create_if_missing": true},
                "volume": {"number": 1},
                "source_language": "en",
                "target_language": "fr",
                "provider_id": provider_id,
                "pipeline": {"threads": 3, "quality": "fast"},
                "chapters": chapters,
                "callback_url": receiver.url("/hook"),
                "external_id": format!("drill-{n}"),
            })
        })
        .collect();
    let spacing = Duration::from_millis(seconds * 500 / books.max(1));
    let submitter = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut accepted = Vec::new();
            for (n, body) in bodies.iter().enumerate() {
                accepted.push(client.submit(body, &format!("drill-{n}")).await);
                tokio::time::sleep(spacing).await;
            }
            accepted
        })
    };

    // The kills: a random process every 3 to 8 s, started again at once on
    // its addresses. For a pipeline, the simulator's request count once it
    // is gone bounds the calls it could have cut.
    let mut kills: BTreeMap<&'static str, u32> = BTreeMap::new();
    let mut restarts = 0u32;
    let mut pipeline_kills: Vec<u64> = Vec::new();
    let drill_end = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        let pause = Duration::from_millis(rng.gen_range(3000..=8000));
        if tokio::time::Instant::now() + pause > drill_end {
            break;
        }
        tokio::time::sleep(pause).await;
        let victim = rng.gen_range(0..processes.len());
        let role = processes[victim].role;
        processes[victim].server.kill().await;
        if role == Role::Pipeline {
            pipeline_kills.push(simulator.requests().await);
        }
        *kills.entry(role.name()).or_default() += 1;
        println!(
            "crash drill: t={:.1}s SIGKILL {} #{victim}",
            started.elapsed().as_secs_f64(),
            role.name()
        );
        let to = matches!(role, Role::Gateway | Role::Pipeline).then_some(addresses);
        let replacement = builder(&installation, role, to)
            .listen_as(&processes[victim].server)
            .start()
            .await;
        processes[victim].server = replacement;
        restarts += 1;
    }
    println!(
        "crash drill: kills over, t={:.1}s",
        started.elapsed().as_secs_f64()
    );

    let accepted = match tokio::time::timeout(Duration::from_secs(300), submitter).await {
        Ok(Ok(accepted)) => accepted,
        Ok(Err(e)) => panic!("the submitter: {e}\n{}", stderr_tails(&processes)),
        Err(_) => panic!("submissions not done\n{}", stderr_tails(&processes)),
    };
    assert_eq!(accepted.len() as u64, books);

    // Every request completes.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300 + books * 6);
    let mut failed = Vec::new();
    for id in &accepted {
        let doc = client.wait_final(id, deadline).await;
        if doc["status"] != "completed" {
            failed.push(doc);
        }
    }
    assert!(
        failed.is_empty(),
        "requests not completed: {failed:#?}\n{}",
        stderr_tails(&processes)
    );

    // Every final webhook arrives; a repeat is the same event sent again
    // (same request, same signed bytes), never a second one.
    let finals = |calls: &[Call]| -> HashMap<String, Vec<Call>> {
        let mut by_request: HashMap<String, Vec<Call>> = HashMap::new();
        for call in calls
            .iter()
            .filter(|c| c.header("x-service-event") == Some("translation_request.finished"))
        {
            let request = call.json()["request_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            by_request.entry(request).or_default().push(call.clone());
        }
        by_request
    };
    let webhook_wait = Duration::from_secs(180);
    let calls = {
        let until = Instant::now() + webhook_wait;
        loop {
            let calls = receiver.calls();
            let by_request = finals(&calls);
            if accepted.iter().all(|id| by_request.contains_key(id)) {
                break calls;
            }
            if Instant::now() > until {
                let missing: Vec<&String> = accepted
                    .iter()
                    .filter(|id| !by_request.contains_key(*id))
                    .collect();
                panic!(
                    "final webhooks missing after {webhook_wait:?} for {missing:?}\n{}",
                    stderr_tails(&processes)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let by_request = finals(&calls);
    let mut webhook_repeats = 0usize;
    for id in &accepted {
        let received = &by_request[id];
        for call in received {
            call.verify(WEBHOOK_SECRET)
                .unwrap_or_else(|e| panic!("final webhook of {id}: {e}"));
            let delivery = call.header("x-service-delivery").unwrap_or_default();
            let (request, attempt) = delivery.rsplit_once(':').unwrap_or(("", ""));
            assert_eq!(request, id, "X-Service-Delivery {delivery}");
            assert!(
                attempt.parse::<u32>().is_ok(),
                "X-Service-Delivery {delivery}"
            );
            assert_eq!(call.json()["status"], "completed", "{id}");
            assert_eq!(
                call.body, received[0].body,
                "final webhooks of {id} that are not the same event sent again"
            );
        }
        webhook_repeats += received.len() - 1;
    }

    // Passages: each sent once, but for those whose call a pipeline SIGKILL
    // cut (sent before that pipeline was gone, again after).
    let stats = simulator.stats().await;
    let calls_made = stats["requests"].as_u64().unwrap_or(0);
    let sent = sends(&simulator).await;
    let passages = books * u64::from(CHAPTERS) * PARAGRAPHS as u64;
    assert_eq!(sent.len() as u64, passages, "every passage sent");
    let mut duplicates = 0usize;
    let mut unexplained = Vec::new();
    for (passage, ns) in &sent {
        for pair in ns.windows(2) {
            duplicates += 1;
            let cut = pipeline_kills
                .iter()
                .any(|&gone| pair[0] <= gone && gone < pair[1]);
            if !cut {
                unexplained.push((passage.clone(), ns.clone()));
            }
        }
    }
    let wall = started.elapsed();
    let kills_text: Vec<String> = kills.iter().map(|(r, n)| format!("{r}={n}")).collect();
    println!(
        "crash drill: seed={seed} books={books} kills: {} (total {}) restarts={restarts} \
         wall={:.1}s calls={calls_made} passages={passages} duplicates={duplicates} \
         (cut by a pipeline SIGKILL: {}) webhook_repeats={webhook_repeats}",
        if kills_text.is_empty() {
            "none".to_owned()
        } else {
            kills_text.join(" ")
        },
        kills.values().sum::<u32>(),
        wall.as_secs_f64(),
        duplicates - unexplained.len(),
    );
    assert!(
        unexplained.is_empty(),
        "passages sent again with no pipeline SIGKILL between the sends \
         (arrival numbers; pipeline kills after calls {pipeline_kills:?}): {unexplained:?}"
    );
}
