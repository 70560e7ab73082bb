"""The inspector's cluster panel in headless Chromium: a one-member etcd on loopback, a leader serving the page and a
follower. The page shows a row per member (this leader, and the follower as the leader sees it, with its lag) and
charts of the applied seq and of each member's lag, from `stats`' `cluster` (Protocol/methods.md#stats). Skipped
when `etcd` is not installed (Tests/cluster/run.sh installs it). Every process is stopped at the end."""

import json
import shutil
import socket
import subprocess
import time

import pytest
from selenium.webdriver.common.by import By

from test_inspector import Rpc, browser, open_inspector, rpc, save_screenshot, start_kvod, wait_for  # noqa: F401

pytestmark = pytest.mark.skipif(shutil.which("etcd") is None, reason="etcd is not installed")


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def wait_until(what, condition, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(0.1)
    pytest.fail(f"{what} within {seconds} s")


def test_the_cluster_panel_shows_each_member(tmp_path, browser):  # noqa: F811
    client_port, peer_port, leader_port, follower_port = free_ports(4)
    with open(tmp_path / "etcd.log", "wb") as etcd_log:
        etcd = subprocess.Popen(
            ["etcd", "--name", "e0", "--data-dir", str(tmp_path / "etcd"),
             "--listen-client-urls", f"http://127.0.0.1:{client_port}",
             "--advertise-client-urls", f"http://127.0.0.1:{client_port}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
             "--initial-cluster", f"e0=http://127.0.0.1:{peer_port}", "--log-level", "warn"],
            stdout=etcd_log, stderr=etcd_log)
    daemons = []
    try:
        def member(name, port):
            return ("--data-dir", str(tmp_path / name), "--cluster-etcd", f"http://127.0.0.1:{client_port}",
                    "--cluster", "inspector", "--advertise", f"127.0.0.1:{port}", "--cluster-lease-seconds", "2")

        for name in ["leader", "follower", "leader-log", "follower-log"]:
            (tmp_path / name).mkdir()
        leader = start_kvod(tmp_path / "leader-log", *member("leader", leader_port), port=leader_port)
        daemons.append(leader)
        wait_until("a writable leader", lambda: rpc(leader_port, "hello").get("writable") is True)
        follower = start_kvod(tmp_path / "follower-log", *member("follower", follower_port), port=follower_port)
        daemons.append(follower)
        wait_until("a linked follower", lambda: rpc(leader_port, "stats")["cluster"]["followers"] != [])

        open_inspector(browser, leader)
        wait_for(browser, lambda d: d.find_element(By.ID, "cluster").is_displayed(), "no cluster panel")
        rows = wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, '[data-testid="cluster-member"]')) == 2
                        and d.find_elements(By.CSS_SELECTOR, '[data-testid="cluster-member"]'), "not a row per member")
        assert rows[0].get_attribute("data-role") == "leader"
        assert rows[0].get_attribute("data-address") == f"127.0.0.1:{leader_port}"
        assert rows[1].get_attribute("data-role") == "follower"
        # Writes on the leader: the applied seq chart follows; the follower's lag chart exists and comes back to 0.
        writer = Rpc(leader_port)
        try:
            for value in range(200):
                seq = writer("set", {"path": "person.firstName", "value": f"name {value}"})["seq"]
        finally:
            writer.close()
        wait_for(browser, lambda d: float(d.find_element(By.CSS_SELECTOR, '#cluster-charts [data-chart="seq"]')
                                          .get_attribute("data-value") or 0) >= seq, "the applied seq did not follow")
        lag_charts = [chart.get_attribute("data-chart") for chart in
                      browser.find_elements(By.CSS_SELECTOR, '#cluster-charts [data-testid="chart"]')]
        assert len([name for name in lag_charts if name.startswith("lag ")]) == 2, lag_charts
        wait_for(browser, lambda d: all(
            float(chart.get_attribute("data-value") or 1) == 0
            for chart in d.find_elements(By.CSS_SELECTOR, '#cluster-charts [data-testid="chart"]')
            if chart.get_attribute("data-chart").startswith("lag ")), "the follower's lag did not come back to 0")
        figures = rpc(leader_port, "stats")["cluster"]
        assert figures["role"] == "leader" and figures["appliedSeq"] >= seq and figures["writable"] is True
        assert json.dumps(figures["followers"][0]["lag"]) == "0"
        assert rpc(follower_port, "stats")["cluster"]["leader"] == f"127.0.0.1:{leader_port}"
        browser.execute_script("document.getElementById('cluster').scrollIntoView()")
        save_screenshot(browser, "inspector-cluster.png")
    finally:
        for daemon in reversed(daemons):
            daemon.stop()
        etcd.terminate()
        try:
            etcd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            etcd.kill()
            etcd.wait(timeout=10)
