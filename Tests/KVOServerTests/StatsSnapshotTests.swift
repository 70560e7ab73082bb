// The two renderings of the server's figures: the `stats` JSON and the Prometheus text agree, and the text follows
// the exposition format (HELP and TYPE before each family, cumulative histogram buckets).
@testable import KVOServer
import Testing
import WireProtocol

struct StatsSnapshotTests {
    static func snapshot() -> StatsSnapshot {
        var stats = ServerStats()
        stats.connectionsOpen = 2
        stats.connectionsAccepted = 5
        stats.subscriptionsOpen = 3
        stats.mutations = 7
        stats.notifications = 11
        stats.bytesIn = 100
        stats.bytesOut = 200
        stats.closes[.slowConsumer] = 1
        stats.loopLagSeconds = 0.042
        stats.tlsBufferedConnections = 4
        stats.journalFsyncSeconds.observe(0.0004)
        stats.journalFsyncSeconds.observe(0.003)
        stats.journalFsyncSeconds.observe(20)
        return StatsSnapshot(stats: stats, seq: 42, uptimeSeconds: 1.5, version: "9.9.9")
    }

    @Test func jsonHasEveryFigure() {
        let json = Self.snapshot().json
        #expect(json["connections"] == 2)
        #expect(json["connectionsAccepted"] == 5)
        #expect(json["subscriptions"] == 3)
        #expect(json["mutations"] == 7)
        #expect(json["notifications"] == 11)
        #expect(json["seq"] == 42)
        #expect(json["uptimeSeconds"] == .double(1.5))
        #expect(json["loopLagSeconds"] == .double(0.042))
        #expect(json["tlsBufferedConnections"] == 4)
        #expect(json["closes"]?["slow_consumer"] == 1)
        #expect(json["closes"]?["client_closed"] == 0)
        #expect(json["journalFsync"]?["count"] == 3)
    }

    @Test func prometheusTextHasEveryFamilyOnce() {
        let text = Self.snapshot().prometheusText
        let lines = text.split(separator: "\n").map(String.init)
        for (sample, value) in [
            ("kvod_connections", "2"), ("kvod_subscriptions", "3"), ("kvod_mutations_total", "7"),
            ("kvod_notifications_total", "11"), ("kvod_bytes_in_total", "100"), ("kvod_bytes_out_total", "200"),
            ("kvod_seq", "42"), ("kvod_loop_lag_seconds", "0.042"), ("kvod_tls_buffered_connections", "4"), ("kvod_closes_total{reason=\"slow_consumer\"}", "1"),
            ("kvod_closes_total{reason=\"too_many_connections\"}", "0"), ("kvod_info{version=\"9.9.9\"}", "1"),
            ("kvod_journal_fsync_seconds_count", "3"), ("kvod_journal_fsync_seconds_bucket{le=\"0.0005\"}", "1"),
            ("kvod_journal_fsync_seconds_bucket{le=\"0.005\"}", "2"),
            ("kvod_journal_fsync_seconds_bucket{le=\"10\"}", "2"),
            ("kvod_journal_fsync_seconds_bucket{le=\"+Inf\"}", "3"),
        ] {
            #expect(lines.contains("\(sample) \(value)"), "\(sample)")
        }
        let types = lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(Set(types).count == types.count, "each family is declared once")
        #expect(lines.contains("# TYPE kvod_mutations_total counter"))
        #expect(lines.contains("# TYPE kvod_connections gauge"))
        #expect(lines.contains("# TYPE kvod_journal_fsync_seconds histogram"))
        #expect(text.hasSuffix("\n"))
    }

    @Test func labelValuesAreEscaped() {
        #expect(StatsSnapshot.escapeLabel(#"a"b\c"# + "\n") == #"a\"b\\c\n"#)
    }
}
