"""The web console driven in headless Chromium as a person uses it.

Elements are found only by what a person sees, in English: a field by the
text of its label, a link by its text, a button by its text. The scenario,
on an installation with no provider yet: sign in as an administrator, add
the provider (an OpenAI-compatible one at PROVIDER_URL) and make it the
default, create an API token and read its secret once,
send an EPUB, follow it to completed, open a chapter's review, download the
translated EPUB, import a shared glossary (after a dry run) and attach it
to the book's series, create a user, have a provider's edit refused, switch
to French and back. Every page visited is checked
with axe-core (injected from the given axe.min.js): a violation of impact
serious or critical fails the run. A PNG of every page is kept, named by
step, in the screenshots folder.

Usage: console_browser.py BASE_URL USERNAME PASSWORD EPUB AXE_JS SCREENSHOTS PROVIDER_URL

Exits 0 when every step and every page check passed; otherwise prints what
failed and exits 1.
"""

import base64
import json
import os
import sys
import time
import traceback
from urllib.parse import urlparse

from selenium import webdriver
from selenium.common.exceptions import (
    ElementClickInterceptedException,
    ElementNotInteractableException,
    NoSuchElementException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

CHROMIUM = os.environ.get("DRAGOMAN_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("DRAGOMAN_CHROMEDRIVER", "/usr/bin/chromedriver")

# How long the translation of the small EPUB may take to reach an end.
COMPLETION_TIMEOUT = 240
# The statuses a request page shows at the end of a successful translation.
COMPLETED = ("Completed", "Completed with residuals")
# The statuses at which waiting any longer is pointless.
ENDED_BADLY = ("Failed", "Cancelled")
# axe impacts that fail the run.
BLOCKING_IMPACTS = ("serious", "critical")
# The series the book is sent into, and the shared glossary attached to it.
SERIES = "Browser saga"
GLOSSARY = "Browser terms"
# The provider the administrator adds.
PROVIDER = "Simulator"
# A user the administrator creates.
NEW_USER = ("browser-reviewer", "a long enough password")


class StepFailed(Exception):
    """A check a person would notice failed."""


def xpath_literal(text):
    """`text` as an XPath string literal, whatever quotes it holds."""
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    parts = text.split("'")
    return "concat(" + ", \"'\", ".join(f"'{p}'" for p in parts) + ")"


class Console:
    """The browser on the console, with the ways a person finds things."""

    def __init__(self, base, axe_source, screenshots):
        self.base = base.rstrip("/")
        self.axe_source = axe_source
        self.screenshots = screenshots
        self.failures = []
        self.passed = []
        self.shots = 0
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--window-size=1280,1000",
            "--lang=en-US",
        ):
            options.add_argument(argument)
        options.add_experimental_option("prefs", {"intl.accept_languages": "en-US,en"})
        self.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        self.driver.set_page_load_timeout(60)
        self.driver.set_script_timeout(120)

    # --- finding things as a person does -------------------------------

    def field(self, label):
        """The form control whose label reads `label`."""
        labels = self.driver.find_elements(
            By.XPATH, f"//label[normalize-space()={xpath_literal(label)}]"
        )
        if not labels:
            raise StepFailed(f"no field labelled {label!r} on {self.path()}")
        found = labels[0]
        target = found.get_attribute("for")
        if target:
            controls = self.driver.find_elements(By.ID, target)
            if not controls:
                raise StepFailed(
                    f"the label {label!r} on {self.path()} is for #{target}, which does not exist"
                )
            return controls[0]
        inside = found.find_elements(By.XPATH, ".//input|.//select|.//textarea")
        if not inside:
            raise StepFailed(f"the label {label!r} on {self.path()} names no control")
        return inside[0]

    def link(self, text):
        """The first link reading `text`."""
        links = self.driver.find_elements(
            By.XPATH, f"//a[normalize-space()={xpath_literal(text)}]"
        )
        if not links:
            raise StepFailed(f"no link {text!r} on {self.path()}")
        return links[0]

    def button(self, text):
        """The first button reading `text`."""
        literal = xpath_literal(text)
        buttons = self.driver.find_elements(
            By.XPATH,
            f"//button[normalize-space()={literal}]"
            f"|//input[(@type='submit' or @type='button') and @value={literal}]",
        )
        if not buttons:
            raise StepFailed(f"no button {text!r} on {self.path()}")
        return buttons[0]

    def heading(self):
        found = self.driver.find_elements(By.TAG_NAME, "h1")
        return found[0].text.strip() if found else ""

    def path(self):
        parsed = urlparse(self.driver.current_url)
        return parsed.path + (f"?{parsed.query}" if parsed.query else "")

    def open(self, path):
        self.driver.get(self.base + path)

    def follow(self, text):
        """Clicks the link `text` and waits for the next page."""
        self.click_and_wait(self.link(text))

    def press(self, text):
        """Clicks the button `text` and waits for the next page."""
        self.click_and_wait(self.button(text))

    def click(self, element):
        """Clicks `element` once it is in view and nothing covers it, as a
        person waits for a page to settle before clicking."""
        for attempt in range(5):
            self.driver.execute_script(
                "arguments[0].scrollIntoView({block: 'center'});", element
            )
            try:
                element.click()
                return
            except (ElementClickInterceptedException, ElementNotInteractableException):
                if attempt == 4:
                    raise
                time.sleep(0.3)

    def click_and_wait(self, element):
        old = self.driver.find_element(By.TAG_NAME, "html")
        self.click(element)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                old.tag_name
            except StaleElementReferenceException:
                break
            time.sleep(0.1)
        else:
            raise StepFailed(f"clicking on {self.path()} led to no new page")
        self.wait_loaded()

    def wait_loaded(self):
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if self.driver.execute_script("return document.readyState") == "complete":
                    return
            except WebDriverException:
                pass
            time.sleep(0.1)
        raise StepFailed(f"{self.path()} did not finish loading")

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def go(self, link, heading=None):
        """Follows the link `link` to the page titled `heading` (by default
        the link's own text)."""
        self.follow(link)
        expected = heading or link
        if self.heading() != expected:
            raise StepFailed(f"{link!r} led to {self.heading()!r}, not {expected!r}")

    def cell(self, text):
        """Whether a table cell reads `text`."""
        return bool(
            self.driver.find_elements(By.XPATH, f"//td[normalize-space()={xpath_literal(text)}]")
        )

    def tick(self, label, on=True):
        """Ticks (or clears) the checkbox labelled `label`."""
        box = self.field(label)
        if box.is_selected() != on:
            self.click(box)
        return box

    # --- what is kept and checked on every page --------------------------

    def screenshot(self, name):
        self.shots += 1
        file = os.path.join(self.screenshots, f"{self.shots:02d}-{name}.png")
        try:
            shot = self.driver.execute_cdp_cmd(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
            )
            with open(file, "wb") as out:
                out.write(base64.b64decode(shot["data"]))
        except WebDriverException:
            self.driver.save_screenshot(file)
        return file

    def run_axe(self):
        """axe-core's violations on the page as it stands."""
        if not self.driver.execute_script("return typeof window.axe === 'object'"):
            self.driver.execute_script(self.axe_source)
        return self.driver.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            axe.run(document, { resultTypes: ["violations"] })
              .then((r) => done({ violations: r.violations.map((v) => ({
                  id: v.id, impact: v.impact, help: v.help,
                  nodes: v.nodes.map((n) => ({ target: n.target, summary: n.failureSummary })),
              })) }))
              .catch((e) => done({ error: String(e) }));
            """
        )

    def check_page(self, name):
        """Screenshot, then axe-core on the page as it stands. A page that
        reloads itself while axe runs (a request's page when its run ends)
        is checked again once loaded."""
        self.screenshot(name)
        try:
            result = self.run_axe()
        except WebDriverException as interrupted:
            print(f"    axe on {name} interrupted ({interrupted.msg}); again", flush=True)
            self.wait_loaded()
            result = self.run_axe()
        if "error" in result:
            self.fail(f"axe on {name} ({self.path()})", f"axe did not run: {result['error']}")
            return
        blocking = [v for v in result["violations"] if v["impact"] in BLOCKING_IMPACTS]
        if not blocking:
            self.passed.append(f"axe on {name} ({self.path()})")
            return
        lines = []
        for violation in blocking:
            lines.append(f"[{violation['impact']}] {violation['id']}: {violation['help']}")
            for node in violation["nodes"][:10]:
                summary = (node["summary"] or "").replace("\n", " ")
                lines.append(f"    at {node['target']}: {summary}")
        self.fail(f"axe on {name} ({self.path()})", "\n".join(lines))

    # --- bookkeeping -------------------------------------------------------

    def fail(self, step, why):
        self.failures.append((step, why))
        print(f"FAIL {step}: {why}", flush=True)

    def step(self, name, action):
        """Runs `action`; a failure is recorded (with a screenshot) and the
        step answers False so that steps depending on it are skipped."""
        print(f"... {name}", flush=True)
        try:
            action()
        except StepFailed as failure:
            self.fail(name, str(failure))
        except Exception:  # noqa: BLE001 - any error fails the step, with its trace
            trace = traceback.format_exc()
            try:
                at = self.path()
            except WebDriverException:
                at = "an unknown page"
            self.fail(name, f"on {at}:\n{trace}")
        else:
            self.passed.append(name)
            print(f"PASS {name}", flush=True)
            return True
        try:
            self.screenshot(f"failed-{name.replace(' ', '-')}")
        except WebDriverException:
            pass
        return False

    def skip(self, name, because):
        self.fail(name, f"not run: {because}")


class Scenario:
    """The person's visit, step by step; what a step learns is kept here."""

    def __init__(self, console, username, password, epub, provider_url):
        self.c = console
        self.username = username
        self.password = password
        self.epub = epub
        self.provider_url = provider_url
        self.request_path = None

    def sign_in(self):
        c = self.c
        c.open("/")
        c.wait_loaded()
        if not c.path().startswith("/login"):
            raise StepFailed(f"/ without a session showed {c.path()}, not the sign-in page")
        c.check_page("sign-in")
        c.field("Username").send_keys(self.username)
        c.field("Password").send_keys(self.password)
        c.press("Sign in")
        if c.path().startswith("/login"):
            raise StepFailed(f"still on the sign-in page after signing in: {c.text()[:500]}")
        # An administrator of a fresh installation starts with the
        # setting-up checklist.
        if c.heading() != "Administration":
            raise StepFailed(f"after signing in the page is {c.heading()!r}, not 'Administration'")
        if not c.driver.find_elements(By.XPATH, "//h2[normalize-space()='Getting started']"):
            raise StepFailed("the administration page has no 'Getting started' checklist")
        c.check_page("first-sign-in")
        c.go("Books", "Your books")
        c.check_page("books")

    def add_provider(self):
        c = self.c
        c.follow("Administration")
        item = c.driver.find_elements(By.CSS_SELECTOR, "[data-item=provider]")
        if not item or "Done" in item[0].text:
            raise StepFailed("the checklist does not show the provider as still to do")
        c.go("Providers")
        if "No provider is registered yet" not in c.text():
            raise StepFailed("a fresh installation's providers page does not say it has none")
        c.check_page("providers-none")
        c.field("Name").send_keys(PROVIDER)
        Select(c.field("Kind")).select_by_visible_text("openai")
        c.field("Model").send_keys("sim-model")
        c.field("Base URL").send_keys(self.provider_url)
        c.field("Input price").send_keys("1")
        c.field("Output price").send_keys("2")
        c.press("Add provider")
        if "The provider was added." not in c.text():
            raise StepFailed(f"no 'The provider was added.' after 'Add provider': {c.text()[:800]}")
        if not c.cell(PROVIDER):
            raise StepFailed(f"{PROVIDER!r} is not in the table of providers")
        defaults = c.driver.find_elements(By.XPATH, "//button[normalize-space()='Make default']")
        if defaults:
            c.click_and_wait(defaults[0])
            if "The default provider was changed." not in c.text():
                raise StepFailed(f"'Make default' was not confirmed: {c.text()[:800]}")
        c.check_page("provider-added")
        c.follow("Administration")
        for key in ("provider", "default_provider"):
            item = c.driver.find_elements(By.CSS_SELECTOR, f"[data-item={key}]")
            if not item or "Done" not in item[0].text:
                raise StepFailed(f"the checklist's {key!r} is not done after adding the provider")

    def create_token(self):
        c = self.c
        c.go("API tokens")
        c.check_page("tokens")
        c.field("Name").send_keys("browser")
        scopes = c.driver.find_elements(
            By.XPATH, "//fieldset[legend[normalize-space()='Scopes']]"
        )
        if not scopes:
            raise StepFailed("no fieldset 'Scopes' on /tokens")
        scope = c.field("content:write")
        if scope.get_attribute("type") != "checkbox":
            raise StepFailed("'content:write' is not a checkbox")
        if not scope.is_selected():
            c.click(scope)
        Select(c.field("Expires")).select_by_visible_text("Never")
        c.press("Create token")
        secrets = c.driver.find_elements(By.ID, "token-secret")
        if not secrets or not secrets[0].text.strip():
            raise StepFailed(f"no secret in #token-secret after 'Create token': {c.text()[:800]}")
        secret = secrets[0].text.strip()
        if "Copy it now: it is shown only once." not in c.text():
            raise StepFailed("the sentence 'Copy it now: it is shown only once.' is missing")
        if not c.driver.find_elements(By.XPATH, "//h2[normalize-space()='Your new token']"):
            raise StepFailed("no heading 'Your new token'")
        c.check_page("token-created")
        c.open("/tokens")
        c.wait_loaded()
        if c.driver.find_elements(By.ID, "token-secret") or secret in c.driver.page_source:
            raise StepFailed("the secret is shown again after reloading /tokens")
        if not c.cell("browser"):
            raise StepFailed("the token 'browser' is not in the table of tokens")

    def send_book(self):
        c = self.c
        c.go("Send a book")
        c.check_page("send")
        c.field("Files").send_keys(os.path.abspath(self.epub))
        c.field("Series").send_keys(SERIES)
        target = c.field("Target language")
        if target.tag_name == "select":
            choice = Select(target)
            french = [
                o for o in choice.options
                if (o.get_attribute("value") or "").lower().startswith("fr")
            ]
            if not french:
                raise StepFailed("the 'Target language' list offers no French")
            choice.select_by_value(french[0].get_attribute("value"))
        else:
            target.clear()
            target.send_keys("fr")
        c.press("Send")
        if not c.path().startswith("/requests/"):
            raise StepFailed(f"'Send' led to {c.path()}: {c.text()[:800]}")
        self.request_path = c.path().split("?")[0]
        c.check_page("request")

    def status(self):
        found = self.c.driver.find_elements(By.CSS_SELECTOR, "[data-field=status]")
        if not found:
            return None
        try:
            return found[0].text.strip()
        except StaleElementReferenceException:
            return None

    def wait_completed(self):
        c = self.c
        deadline = time.time() + COMPLETION_TIMEOUT
        seen = []
        last_reload = time.time()
        while time.time() < deadline:
            shown = self.status()
            if shown and (not seen or seen[-1] != shown):
                seen.append(shown)
            if shown in COMPLETED:
                break
            if shown in ENDED_BADLY:
                raise StepFailed(f"the request ended {shown!r}: {c.text()[:1500]}")
            # The page refreshes itself; a person would still reload now and then.
            if time.time() - last_reload > 30:
                c.driver.refresh()
                c.wait_loaded()
                last_reload = time.time()
            time.sleep(1)
        else:
            raise StepFailed(
                f"the status did not reach Completed within {COMPLETION_TIMEOUT} s "
                f"(statuses seen: {seen}); page: {c.text()[:800]}"
            )
        print(f"    statuses seen: {seen}", flush=True)
        # The end of the run reloads the page; take the final one.
        time.sleep(2)
        c.open(self.request_path)
        c.wait_loaded()
        if self.status() not in COMPLETED:
            raise StepFailed(f"after reloading, the status shows {self.status()!r}")
        for heading in ("Downloads", "Chapters", "Report"):
            if not c.driver.find_elements(
                By.XPATH, f"//h2[normalize-space()={xpath_literal(heading)}]"
            ):
                raise StepFailed(f"the request page has no heading {heading!r}")
        c.check_page("request-completed")

    def book_listed(self):
        c = self.c
        c.go("Books", "Your books")
        links = c.driver.find_elements(
            By.XPATH, f"//a[@href={xpath_literal(self.request_path)}]"
        )
        if not links:
            raise StepFailed(f"no link to {self.request_path} on the books page")
        for column in ("Book", "Status", "Stage", "Progress", "Sent"):
            if not c.driver.find_elements(
                By.XPATH, f"//th[@scope='col'][normalize-space()={xpath_literal(column)}]"
            ):
                raise StepFailed(f"the books page has no column {column!r}")
        c.check_page("books-with-book")
        c.click_and_wait(links[0])
        if c.path().split("?")[0] != self.request_path:
            raise StepFailed(f"the book's link led to {c.path()}")

    def download_epub(self):
        c = self.c
        c.open(self.request_path)
        c.wait_loaded()
        href = c.link("EPUB").get_attribute("href")
        answer = c.driver.execute_async_script(
            """
            const [url, done] = [arguments[0], arguments[arguments.length - 1]];
            fetch(url, { credentials: "same-origin" })
              .then(async (r) => {
                const bytes = new Uint8Array(await r.arrayBuffer());
                done({ status: r.status, length: bytes.length,
                       head: Array.from(bytes.slice(0, 4)),
                       type: r.headers.get("content-type"),
                       disposition: r.headers.get("content-disposition") });
              })
              .catch((e) => done({ error: String(e) }));
            """,
            href,
        )
        if "error" in answer:
            raise StepFailed(f"fetching {href} failed: {answer['error']}")
        print(f"    EPUB download: {json.dumps(answer)}", flush=True)
        if answer["status"] != 200:
            raise StepFailed(f"{href} answered {answer['status']}")
        if bytes(answer["head"][:2]) != b"PK":
            raise StepFailed(f"{href} is not a ZIP (starts with {answer['head']})")
        if answer["length"] <= 1024:
            raise StepFailed(f"{href} is only {answer['length']} bytes")
        if "attachment" not in (answer["disposition"] or ""):
            raise StepFailed(f"{href} is not answered as an attachment: {answer['disposition']!r}")

    def review(self):
        c = self.c
        c.open(self.request_path)
        c.wait_loaded()
        c.follow("Review")
        if not c.path().startswith("/review/"):
            raise StepFailed(f"'Review' led to {c.path()}")
        if not c.heading().startswith("Review: "):
            raise StepFailed(f"the review page's title is {c.heading()!r}")
        labels = c.driver.find_elements(
            By.XPATH, "//label[starts-with(normalize-space(), 'Translation of passage ')]"
        )
        if not labels:
            raise StepFailed(f"no passage ('Translation of passage N') on the review page: {c.text()[:800]}")
        first = c.field(labels[0].text.strip())
        if not (first.get_attribute("value") or "").strip():
            raise StepFailed(f"{labels[0].text.strip()!r} is empty")
        for label in ("Save", "Validate"):
            c.button(label)
        print(f"    {len(labels)} passages shown", flush=True)
        c.check_page("review")
        # A long chapter is read page by page.
        if c.driver.find_elements(By.XPATH, "//a[normalize-space()='Next page']"):
            c.follow("Next page")
            if not c.driver.find_elements(By.XPATH, "//*[starts-with(normalize-space(), 'Page 2 of ')]"):
                raise StepFailed(f"'Next page' did not lead to page 2: {c.text()[:800]}")
            c.link("Previous page")
            c.check_page("review-page-2")

    def account(self):
        c = self.c
        c.follow("Account")
        if self.username not in c.text():
            raise StepFailed("the account page does not show the username")
        c.check_page("account")

    def administration(self):
        c = self.c
        c.go("Administration")
        if not c.driver.find_elements(By.XPATH, "//h2[normalize-space()='Getting started']"):
            raise StepFailed("no heading 'Getting started' on /admin")
        for name in ("Users", "Providers", "Settings"):
            c.link(name)
        c.check_page("administration")

    def open_details(self, summary):
        """Opens the disclosure whose summary reads `summary`."""
        c = self.c
        found = c.driver.find_elements(
            By.XPATH, f"//details[summary[normalize-space()={xpath_literal(summary)}]]"
        )
        if not found:
            raise StepFailed(f"no disclosure {summary!r} on {c.path()}")
        if not found[0].get_attribute("open"):
            c.click(found[0].find_element(By.TAG_NAME, "summary"))
        if not found[0].get_attribute("open"):
            raise StepFailed(f"clicking {summary!r} on {c.path()} did not open it")
        return found[0]

    def users(self):
        c = self.c
        c.open("/admin")
        c.wait_loaded()
        c.go("Users")
        c.check_page("users")
        username, password = NEW_USER
        c.field("Username").send_keys(username)
        c.field("Password").send_keys(password)
        c.press("Create user")
        if "The user was created." not in c.text():
            raise StepFailed(f"no 'The user was created.' after 'Create user': {c.text()[:800]}")
        if not c.cell(username):
            raise StepFailed(f"{username!r} is not in the table of users")
        self.open_details("Set a password")
        c.check_page("users-created")

    def providers(self):
        c = self.c
        c.open("/admin")
        c.wait_loaded()
        c.go("Providers")
        c.check_page("providers")
        summaries = c.driver.find_elements(
            By.XPATH, "//details/summary[starts-with(normalize-space(), 'Edit ')]"
        )
        if not summaries:
            raise StepFailed("no provider to edit ('Edit …') on /admin/providers")
        summary = summaries[0].text.strip()
        details = self.open_details(summary)
        # A discount of the whole price is refused, in words, under the
        # field's label.
        discount = details.find_element(
            By.XPATH, ".//input[starts-with(@id, 'batch_discount-')]"
        )
        discount.clear()
        discount.send_keys("1.5")
        c.click_and_wait(details.find_element(By.XPATH, ".//button[normalize-space()='Save']"))
        alerts = c.driver.find_elements(By.XPATH, "//*[@role='alert']")
        if not alerts or "Batch discount: " not in alerts[0].text:
            raise StepFailed(f"a batch discount of 1.5 was not refused in words: {c.text()[:800]}")
        c.check_page("providers-refused")

    def glossaries(self):
        c = self.c
        c.go("Glossaries")
        c.check_page("glossaries")
        c.field("Name of the new glossary").send_keys(GLOSSARY)
        c.field("Or paste the terms").send_keys("dragon, dragon\nsword, épée\nking, roi")
        c.tick("Dry run")
        c.press("Import")
        if "Dry run: nothing was stored." not in c.text():
            raise StepFailed(f"the dry run showed no preview: {c.text()[:800]}")
        if c.cell(GLOSSARY):
            raise StepFailed("the dry run stored the glossary")
        c.check_page("glossary-preview")
        # The form keeps what was typed; the real import is the same form
        # without the dry run.
        c.tick("Dry run", on=False)
        c.press("Import")
        if not c.cell(GLOSSARY):
            raise StepFailed(f"{GLOSSARY!r} is not in the table after importing: {c.text()[:800]}")
        c.check_page("glossary-imported")

    def series(self):
        c = self.c
        c.go("Series")
        c.check_page("series")
        c.follow(SERIES)
        if SERIES not in c.heading():
            raise StepFailed(f"the series' link led to {c.heading()!r}")
        Select(c.field("Glossary")).select_by_visible_text(GLOSSARY)
        c.press("Attach a glossary")
        if "The series' shared glossary was changed." not in c.text():
            raise StepFailed(f"attaching {GLOSSARY!r} was not confirmed: {c.text()[:800]}")
        c.check_page("series-volume")

    def settings(self):
        c = self.c
        c.open("/admin")
        c.wait_loaded()
        c.go("Settings")
        for section in ("Mail", "Exports", "Library", "Memory", "Webhooks"):
            if not c.driver.find_elements(
                By.XPATH, f"//h2[normalize-space()={xpath_literal(section)}]"
            ):
                raise StepFailed(f"the settings page has no section {section!r}")
        c.button("Save")
        c.check_page("settings")

    def languages(self):
        c = self.c
        c.open("/")
        c.wait_loaded()
        c.follow("Français")
        lang = c.driver.find_element(By.TAG_NAME, "html").get_attribute("lang")
        if lang != "fr":
            raise StepFailed(f"after 'Français' the page is <html lang={lang!r}>")
        nav = c.driver.find_elements(By.XPATH, "//nav//a[normalize-space()='Livres']")
        if not nav:
            raise StepFailed("after 'Français' no nav link 'Livres'")
        c.check_page("books-french")
        # The pages with the most words, in French too.
        for path, name in (
            ("/books/new", "send-french"),
            ("/tokens", "tokens-french"),
            ("/glossaries", "glossaries-french"),
            ("/admin/providers", "providers-french"),
            ("/admin/settings", "settings-french"),
        ):
            c.open(path)
            c.wait_loaded()
            c.check_page(name)
        if self.request_path:
            c.open(self.request_path)
            c.wait_loaded()
            c.check_page("request-french")
        c.follow("English")
        lang = c.driver.find_element(By.TAG_NAME, "html").get_attribute("lang")
        if lang != "en":
            raise StepFailed(f"after 'English' the page is <html lang={lang!r}>")
        c.link("Books")


def main(argv):
    if len(argv) != 8:
        print(__doc__, file=sys.stderr)
        return 2
    base, username, password, epub, axe_js, screenshots, provider_url = argv[1:]
    os.makedirs(screenshots, exist_ok=True)
    with open(axe_js, encoding="utf-8") as source:
        axe_source = source.read()
    console = Console(base, axe_source, screenshots)
    try:
        s = Scenario(console, username, password, epub, provider_url)
        if console.step("sign in", s.sign_in):
            provided = console.step("add the provider", s.add_provider)
            console.step("create a token", s.create_token)
            if provided and console.step("send a book", s.send_book):
                if console.step("wait until completed", s.wait_completed):
                    console.step("find the book on the books page", s.book_listed)
                    console.step("download the EPUB", s.download_epub)
                    console.step("review a chapter", s.review)
                else:
                    for name in ("download the EPUB", "review a chapter"):
                        console.skip(name, "the book did not complete")
            else:
                for name in ("wait until completed", "download the EPUB", "review a chapter"):
                    console.skip(name, "the book was not sent")
            console.step("glossaries", s.glossaries)
            console.step("series", s.series)
            console.step("account", s.account)
            console.step("administration", s.administration)
            console.step("users", s.users)
            console.step("providers", s.providers)
            console.step("settings", s.settings)
            console.step("French and back", s.languages)
        else:
            console.skip("everything after signing in", "signing in failed")
    finally:
        console.driver.quit()
    print(f"\nscreenshots: {os.path.abspath(screenshots)}")
    print(f"passed ({len(console.passed)}): {', '.join(console.passed)}")
    if console.failures:
        print(f"FAILED ({len(console.failures)}):")
        for step, why in console.failures:
            print(f"- {step}: {why}")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
