// kvod's logs as a process writes them: `--log-format json` gives one JSON object per line on stderr, with the start
// line, connection open and close lines (with the close reason) and warnings for limit closes.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct LoggingTests {
    @Test func jsonLogLinesParseAndSayWhatHappened() throws {
        let server = try KVODProcess.start(["--log-format", "json", "--log-level", "debug", "--max-line-bytes", "1024"])
        let client = try server.client()
        try client.hello(client: "log-test")
        client.close()
        let tooLong = try server.client()
        try tooLong.sendRaw(String(repeating: "x", count: 2000))
        #expect(throws: KVOClientError.self) {
            while true { _ = try tooLong.readRawLine(timeout: .seconds(5)) }
        }
        #expect(server.stop() == 0)
        #expect(server.waitForLog("kvod stopped"))

        let lines = server.stderrText.split(separator: "\n").map(String.init)
        #expect(lines.count >= 5)
        var entries: [JSONValue] = []
        for line in lines {
            let entry = try JSONParser.parse(line)
            for member in ["time", "level", "label", "message"] {
                #expect(entry[member]?.stringValue != nil, "\(member) missing in \(line)")
            }
            #expect(entry["time"]?.stringValue?.hasSuffix("Z") == true)
            entries.append(entry)
        }
        let started = try #require(entries.first { $0["message"] == "kvod started" })
        #expect(started["level"] == "info")
        #expect(started["label"] == "kvod")
        #expect(started["metadata"]?["address"]?.stringValue == "\(server.host):\(server.port)")
        #expect(started["metadata"]?["storage"] == "in memory (no data directory)")
        #expect(started["metadata"]?["access"] == "open (no tokens)")
        #expect(entries.contains { $0["message"] == "connection opened" && $0["level"] == "debug" })
        #expect(entries.contains {
            $0["message"] == "connection closed" && $0["metadata"]?["close.reason"] == "client_closed"
                && $0["metadata"]?["client.name"] == "log-test"
        })
        #expect(entries.contains {
            $0["level"] == "warning" && $0["metadata"]?["close.reason"] == "line_too_long"
        })
        #expect(entries.contains { $0["message"] == "kvod stopped" })
    }

    @Test func textLogsStayTheDefault() throws {
        let server = try KVODProcess.start()
        #expect(server.stop() == 0)
        #expect(server.waitForLog("kvod stopped"))
        let first = try #require(server.stderrText.split(separator: "\n").first)
        #expect(!first.hasPrefix("{"))
        #expect(first.contains("kvod started"))
    }
}
