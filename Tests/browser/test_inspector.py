"""kvod's web inspector (`kvod --web-port`) in a real browser: headless Chromium driven by Selenium.

kvod serves the page on its inspector port; the page talks to kvod over WebSocket on kvod's own port with the
TypeScript client. The tests open the page, subscribe from it, change the watched value with `kvoctl set` and read
the new value and the notification (old -> new, seq) from the page; set an invalid value from the page and read the
error inline; follow a `$ref`; and find the page's subscription under observers. With tokens, the page asks for one.
The HTTP side (headers, CSP, 404, kvod.js = the TypeScript client's dist/index.js) is checked with plain urllib.
With `--tls-only` the page is served over https and connects over wss:// (certificates made by openssl; Chromium
trusts the server's key by its SPKI hash).
Every wait is bounded; kvod is stopped at the end. KVOD_SCREENSHOT=1 saves docs/inspector.png.
"""

import json
import os
import pathlib
import re
import select
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

REPO = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT = 20.0  # seconds for kvod to print its listening line
WAIT = 15.0  # seconds for anything to show on the page
TOKEN = "inspector-test-token"


def _binary(variable, default):
    configured = os.environ.get(variable)
    path = pathlib.Path(configured) if configured else REPO / default
    if not path.is_absolute() and not path.exists():
        path = REPO / path
    return path


KVOD = _binary("KVOD_BIN", ".build/debug/kvod")
KVOCTL = _binary("KVOCTL_BIN", ".build/debug/kvoctl")


class Daemon:
    def __init__(self, process, port, web_url, log_path, stdout):
        self.process, self.port, self.web_url, self.log_path, self.stdout = process, port, web_url, log_path, stdout

    def log(self):
        return self.log_path.read_text(errors="replace")[-4000:]

    def kvoctl(self, *arguments, env=None):
        result = subprocess.run(
            [str(KVOCTL), "--host", "127.0.0.1", "--port", str(self.port), *arguments],
            capture_output=True, text=True, timeout=15, env=env)
        assert result.returncode == 0, f"kvoctl {arguments}: {result.stderr}"
        return result.stdout.strip()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_kvod(tmp_path, *arguments, env=None):
    log_path = tmp_path / "kvod.stderr.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(KVOD), "--host", "127.0.0.1", "--port", "0", "--web-port", "0", *arguments],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env)
    deadline = time.monotonic() + START_TIMEOUT
    data = b""
    while b"kvod listening on" not in data or not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            process.kill()
            pytest.fail(f"kvod did not start: {data!r}\n{log_path.read_text(errors='replace')}")
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096)
            assert chunk, f"kvod exited: {data!r}\n{log_path.read_text(errors='replace')}"
            data += chunk
    text = data.decode()
    port = int(re.search(r"kvod listening on 127\.0\.0\.1:(\d+)", text).group(1))
    web_url = re.search(r"kvod inspector on (https?://127\.0\.0\.1:\d+/)", text).group(1)
    return Daemon(process, port, web_url, log_path, text)


@pytest.fixture(scope="module")
def kvod(tmp_path_factory):
    daemon = start_kvod(tmp_path_factory.mktemp("kvod"))
    yield daemon
    try:
        assert daemon.process.poll() is None, f"kvod died during the tests:\n{daemon.log()}"
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "chromium and chromedriver must be installed (Tests/browser/run.sh does it)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1440,1100", "--force-device-scale-factor=1", "--no-first-run"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


def wait_for(driver, condition, message, timeout=WAIT):
    """Polls `condition(driver)` until it returns something truthy; fails with `message` and the page's state.
    An element that is missing, or was replaced while it was read (a panel re-rendered), is tried again."""
    try:
        return WebDriverWait(
            driver, timeout, poll_frequency=0.1,
            ignored_exceptions=[NoSuchElementException, StaleElementReferenceException]).until(lambda d: condition(d))
    except WebDriverException as error:
        status = driver.find_element(By.ID, "status").text
        console = "\n".join(entry["message"] for entry in driver.get_log("browser"))
        pytest.fail(f"{message} (waited {timeout} s; status: {status!r}; console:\n{console})\n{error.msg or ''}")


def open_inspector(driver, daemon):
    driver.get(daemon.web_url)
    wait_for(driver, lambda d: "Connected" in d.find_element(By.ID, "status").text, "the page did not connect")
    # The root's keys are listed once the first browse is done.
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, '#tree li[data-path="person"]'),
             "the tree did not show the root")


def fill(driver, element_id, text):
    field = driver.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text)


def texts(elements):
    return [element.text for element in elements]


# MARK: - HTTP


def fetch(url, method="GET"):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=5) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_the_port_serves_the_page_its_code_and_the_client_and_nothing_else(kvod):
    assert kvod.stdout.rstrip("\n").splitlines()[-1].startswith("kvod listening on"), "listening stays the last line"
    status, headers, body = fetch(kvod.web_url)
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Cache-Control"] == "no-store"
    assert headers["X-Content-Type-Options"] == "nosniff"
    policy = headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "default-src 'none'" in policy
    assert f"connect-src ws://127.0.0.1:{kvod.port}" in policy
    assert f'<meta name="kvod-address" content="127.0.0.1:{kvod.port}">' in body.decode()
    assert '<meta name="kvod-access" content="open">' in body.decode()

    status, headers, body = fetch(kvod.web_url + "kvod.js")
    assert status == 200 and headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert body == (REPO / "clients/typescript/dist/index.js").read_bytes(), \
        "kvod.js is not the TypeScript client: cp clients/typescript/dist/index.js Sources/kvod/Inspector/kvod.js"
    status, headers, body = fetch(kvod.web_url + "inspector.js")
    assert status == 200 and b'from "./kvod.js"' in body
    status, headers, _ = fetch(kvod.web_url + "inspector.css")
    assert status == 200 and headers["Content-Type"] == "text/css; charset=utf-8"

    status, _, body = fetch(kvod.web_url + "nope")
    assert status == 404
    status, _, body = fetch(kvod.web_url + "?x=1", method="HEAD")
    assert status == 200 and body == b""
    status, headers, _ = fetch(kvod.web_url, method="DELETE")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


# MARK: - The page


def test_browsing_follows_a_ref(kvod, browser):
    kvod.kvoctl("insert", "department.employees", '{"name": "Ada", "salary": 100}')
    employee = json.loads(kvod.kvoctl("get", "department.employees"))[0]["$id"]
    kvod.kvoctl("set", "department.manager", json.dumps({"$ref": employee}))
    open_inspector(browser, kvod)
    browser.find_element(By.CSS_SELECTOR, '#tree li[data-path="department"] > button.key').click()
    wait_for(browser, lambda d: "Department" in d.find_element(By.ID, "browse-info").text,
             "browsing department did not describe its class")
    # The manager is written out first; the same employee in the array is a $ref.
    ref = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#tree button.ref"), "no $ref link")
    assert ref.text == f"→ ${employee}"
    ref.click()
    wait_for(browser, lambda d: f"Employee ${employee}" in d.find_element(By.ID, "browse-info").text,
             "following the $ref did not browse the employee")
    assert browser.find_element(By.ID, "browse-path").get_attribute("value") == f"${employee}"
    assert "Ada" in browser.find_element(By.ID, "tree").text


def test_a_kvoctl_set_shows_live_on_the_page(kvod, browser):
    open_inspector(browser, kvod)
    fill(browser, "subscribe-path", "person.firstName")
    prior = browser.find_element(By.ID, "option-prior")
    if not prior.is_selected():
        prior.click()
    browser.find_element(By.ID, "subscribe").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '[data-testid="subscription"][data-path="person.firstName"]'),
             "the subscription did not show")

    seq = json.loads(kvod.kvoctl("set", "person.firstName", "Grace"))["seq"]
    after = f'[data-testid="notification"][data-path="person.firstName"][data-seq="{seq}"][data-prior="false"]'
    row = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, after), "the notification did not show")[0]
    assert row.find_element(By.CSS_SELECTOR, ".seq").text == str(seq)
    assert row.find_element(By.CSS_SELECTOR, ".kind").text == "setting"
    assert row.find_element(By.CSS_SELECTOR, ".old").text == '""'
    assert row.find_element(By.CSS_SELECTOR, ".new").text == '"Grace"'
    prior_row = browser.find_element(
        By.CSS_SELECTOR, f'[data-testid="notification"][data-seq="{seq}"][data-prior="true"]')
    assert prior_row.find_element(By.CSS_SELECTOR, ".note").text == "prior"
    assert prior_row.find_element(By.CSS_SELECTOR, ".old").text == '""'
    current = browser.find_element(By.CSS_SELECTOR, '[data-path="person.firstName"] [data-testid="current-value"]')
    assert current.text == '"Grace"'

    # A second change, seen with its old value.
    seq2 = json.loads(kvod.kvoctl("set", "person.firstName", "Ada"))["seq"]
    second = f'[data-testid="notification"][data-seq="{seq2}"][data-prior="false"]'
    row = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, second), "the second notification")[0]
    assert (row.find_element(By.CSS_SELECTOR, ".old").text, row.find_element(By.CSS_SELECTOR, ".new").text) \
        == ('"Grace"', '"Ada"')
    wait_for(browser, lambda d: d.find_element(
        By.CSS_SELECTOR, '[data-path="person.firstName"] [data-testid="current-value"]').text == '"Ada"',
        "the current value did not follow")

    # observers lists the page's subscription, on the page's own connection.
    browser.find_element(By.ID, "refresh-observers").click()
    entry = wait_for(browser, lambda d: d.find_elements(
        By.CSS_SELECTOR, '[data-testid="observer-subscription"][data-path="person.firstName"]'),
        "observers did not list the page's subscription")[0]
    assert "new, old, prior" in entry.text
    own = browser.find_element(By.CSS_SELECTOR, "#observers-view tr.self")
    assert "this page" in own.text and "kvod-inspector" in own.text and "person.firstName" in own.text

    browser.find_element(By.ID, "refresh-stats").click()
    wait_for(browser, lambda d: int(d.find_element(By.CSS_SELECTOR, 'dd[data-stat="subscriptions"]').text or 0) >= 1,
             "stats did not show the subscription")
    assert int(browser.find_element(By.CSS_SELECTOR, 'dd[data-stat="seq"]').text) >= seq2


def test_setting_from_the_page_shows_the_seq_or_the_error_inline(kvod, browser):
    open_inspector(browser, kvod)
    fill(browser, "set-path", "contact.email")
    fill(browser, "set-value", '"not an address"')
    browser.find_element(By.ID, "set-submit").click()
    result = browser.find_element(By.ID, "set-result")
    wait_for(browser, lambda d: "error 1002" in result.text, "the validation error did not show")
    assert "validation failed" in result.find_element(By.CSS_SELECTOR, ".error-message").text
    data = json.loads(result.find_element(By.CSS_SELECTOR, ".error-data").text)
    assert data["path"] == "contact.email"
    assert kvod.kvoctl("get", "contact.email") == "null", "nothing was stored"

    fill(browser, "set-value", "not json")
    browser.find_element(By.ID, "set-submit").click()
    wait_for(browser, lambda d: "not JSON" in result.text, "a value that is not JSON is refused on the page")

    fill(browser, "set-value", '"  ada@example.com "')
    browser.find_element(By.ID, "set-submit").click()
    wait_for(browser, lambda d: "set at seq" in result.text, "a valid set did not show its seq")
    seq = int(result.find_element(By.CSS_SELECTOR, ".seq").text)
    assert '"ada@example.com"' in result.text, "the trimmed value kvod stored is shown"
    meta = json.loads(kvod.kvoctl("get", "contact.email", "--meta"))
    assert meta["value"] == "ada@example.com" and meta["modSeq"] == seq

    if os.environ.get("KVOD_SCREENSHOT") == "1":
        screenshot(kvod, browser)


def screenshot(kvod, browser):
    """Saves docs/inspector.png: the page after a few changes, with notifications, observers and stats."""
    open_inspector(browser, kvod)
    fill(browser, "subscribe-path", "labColor.color")
    browser.find_element(By.ID, "option-prior").click()
    browser.find_element(By.ID, "subscribe").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '[data-testid="subscription"]'), "subscribed")
    for value in ["40", "70"]:
        seq = json.loads(kvod.kvoctl("set", "labColor.lComponent", value))["seq"]
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'[data-seq="{seq}"]'), "notified")
    browser.find_element(By.CSS_SELECTOR, '#tree li[data-path="labColor"] > button.key').click()
    wait_for(browser, lambda d: "LabColor" in d.find_element(By.ID, "browse-info").text, "browsed labColor")
    fill(browser, "set-path", "contact.email")
    fill(browser, "set-value", '"nope"')
    browser.find_element(By.ID, "set-submit").click()
    wait_for(browser, lambda d: "error 1002" in d.find_element(By.ID, "set-result").text, "error shown")
    browser.find_element(By.ID, "refresh-observers").click()
    browser.find_element(By.ID, "refresh-stats").click()
    time.sleep(0.5)
    for _ in range(2):  # the window's height is not the viewport's: resize until the whole page shows
        height = browser.execute_script("return document.documentElement.scrollHeight")
        inner = browser.execute_script("return window.innerHeight")
        size = browser.get_window_size()
        browser.set_window_size(1440, min(size["height"] + max(height - inner, 0), 2000))
        time.sleep(0.3)
    browser.save_screenshot(str(REPO / "docs" / "inspector.png"))


# MARK: - Tokens and origins


def test_with_tokens_the_page_asks_for_one(tmp_path, browser):
    env = dict(os.environ, KVOD_TOKEN=TOKEN)
    daemon = start_kvod(tmp_path, "--auth-timeout", "0", env=env)
    try:
        status, _, body = fetch(daemon.web_url)
        assert '<meta name="kvod-access" content="token">' in body.decode()
        browser.get(daemon.web_url)
        form = wait_for(browser, lambda d: d.find_element(By.ID, "token-form"), "no token form")
        wait_for(browser, lambda d: form.is_displayed(), "the token form is not shown")
        fill(browser, "token", "wrong")
        browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait_for(browser, lambda d: "wrong token" in d.find_element(By.ID, "token-error").text,
                 "a wrong token was not reported")
        fill(browser, "token", TOKEN)
        browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait_for(browser, lambda d: "Connected" in d.find_element(By.ID, "status").text, "the token did not connect")
        assert "read-write" in browser.find_element(By.ID, "status").text
        assert not form.is_displayed()
        wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#tree li[data-path="person"]'),
                 "the tree did not show the root")
    finally:
        daemon.stop()


def test_with_an_origin_list_the_inspector_may_still_connect(tmp_path, browser):
    daemon = start_kvod(tmp_path, "--ws-origins", "https://elsewhere.example")
    try:
        open_inspector(browser, daemon)
    finally:
        daemon.stop()


# MARK: - TLS


def openssl(*arguments, **options):
    return subprocess.run(["openssl", *arguments], check=True, capture_output=True, timeout=30, **options).stdout


def test_over_https_the_page_connects_with_wss(tmp_path):
    def path(name):
        return str(tmp_path / name)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=kvod test ca")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("server.key"),
            "-out", path("server.csr"), "-subj", "/CN=localhost")
    (tmp_path / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("server.ext"))
    public_key = openssl("x509", "-in", path("server.pem"), "-pubkey", "-noout")
    der = openssl("pkey", "-pubin", "-outform", "der", input=public_key)
    spki = openssl("dgst", "-sha256", "-binary", input=der)

    daemon = start_kvod(tmp_path, "--tls-cert", path("server.pem"), "--tls-key", path("server.key"), "--tls-only")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    import base64
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                     f"--user-data-dir={tmp_path / 'profile'}",
                     f"--ignore-certificate-errors-spki-list={base64.b64encode(spki).decode()}"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(30)
    try:
        assert daemon.web_url.startswith("https://"), daemon.stdout
        open_inspector(driver, daemon)
        assert f"wss://127.0.0.1:{daemon.port}/" in driver.find_element(By.ID, "status").text
        result = subprocess.run(
            [str(KVOCTL), "get", "--host", f"kvods://127.0.0.1:{daemon.port}", "--cacert", path("ca.pem"),
             "person"], capture_output=True, text=True, timeout=15)
        assert result.returncode == 0, result.stderr
        assert "TLS handshake failed" not in daemon.log()
    finally:
        driver.quit()
        daemon.stop()
