//! The web console in a real browser: headless Chromium driven by Selenium
//! (`tests/python/console_browser.py`) finds everything as a person does,
//! by the English texts of labels, links and buttons. The installation
//! starts with no provider, as a fresh one does: an administrator signs
//! in, adds the provider simulator on the providers page and makes it the
//! default, creates an API token and sees its secret once, sends a corpus
//! EPUB, follows it to completed, opens a chapter's review, downloads the
//! translated EPUB and switches to French and back; every page is checked
//! with axe-core (no serious or critical violation) and photographed.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`/usr/bin/chromium`,
//! `/usr/bin/chromedriver`), Selenium in the interpreter named by
//! `DRAGOMAN_TEST_PYTHON` (else `.venv-ci/bin/python`) and axe-core in
//! `tests/node/node_modules`, all installed by `.ci/run`. Without one of
//! them the test is skipped, and fails under `CI=true`. The screenshots
//! are kept in `<target>/console-screenshots`.

use dragoman_e2e::binary::workspace_root;
use dragoman_e2e::books::corpus_dir;
use dragoman_e2e::{Api, Backend};
use dragoman_testing::env::missing;
use dragoman_testing::python::python_with;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// A real book of the corpus (EPUB 3, about 1,200 passages), with a cover
/// that has no text to translate: translated in under a minute by the
/// simulator.
const EPUB: &str = "valid-epub3-childrens-literature-page-list.epub";

/// The whole visit, with up to four minutes for the translation.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(420);

/// The browser and its driver, as Debian installs them.
const BROWSER: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromedriver"];

/// Where the screenshots go: `console-screenshots` in cargo's target folder.
fn screenshots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("console-screenshots")
}

/// Whether `path` is a file, or `false` after the note (a failure under CI)
/// naming `what`.
fn present(path: &Path, what: &str) -> bool {
    if path.is_file() {
        return true;
    }
    missing(
        &format!("{what} ({})", path.display()),
        "no such file; `.ci/run` installs it",
    );
    false
}

#[tokio::test]
async fn a_person_sends_follows_and_downloads_a_book_in_the_console() {
    let Some(python) = python_with("Selenium", "import selenium.webdriver").await else {
        return;
    };
    if !BROWSER
        .iter()
        .all(|program| present(Path::new(program), "Chromium and its driver"))
    {
        return;
    }
    let axe = workspace_root().join("tests/node/node_modules/axe-core/axe.min.js");
    if !present(&axe, "axe-core") {
        return;
    }
    let Some(corpus) = corpus_dir() else {
        return;
    };
    let epub = corpus.join(EPUB);
    if !present(&epub, "the corpus EPUB") {
        return;
    }

    let api = Api::builder(Backend::Sqlite)
        .without_provider()
        .start()
        .await;
    let admin = api.server.create_user("browser-admin", true).await;
    let screenshots = screenshots_dir();
    // Only this run's pictures in the folder.
    let _ = std::fs::remove_dir_all(&screenshots);
    eprintln!("console screenshots: {}", screenshots.display());

    let child = tokio::process::Command::new(&python)
        .arg(workspace_root().join("tests/python/console_browser.py"))
        .arg(api.server.base())
        .arg(&admin.username)
        .arg(&admin.password)
        .arg(&epub)
        .arg(&axe)
        .arg(&screenshots)
        .arg(api.simulator.openai_base_url())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let output = tokio::time::timeout(SCRIPT_TIMEOUT, child.wait_with_output())
        .await
        .expect("the browser visit did not finish in time")
        .expect("the browser visit ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the browser visit failed ({}); screenshots in {}\n{stdout}\nstderr:\n{stderr}\nserver stderr:\n{}",
        output.status,
        screenshots.display(),
        api.server.stderr()
    );
    assert!(
        stdout.contains("all passed"),
        "the browser visit did not report its end:\n{stdout}"
    );
    eprintln!("{stdout}");
}
