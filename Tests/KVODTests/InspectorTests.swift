// The web inspector's port as a process shows it (`--web-port`, KVOD_WEB_PORT, the config file's "web-port"): the
// announce line before the listening line, the page with kvod's address in it, the client beside it. What the page
// does in a browser is Tests/browser/test_inspector.py.
import Foundation
import KVOClient
import TestSupport
import Testing

/// One `GET path` on a fresh connection: the status line, then the rest of the response as text.
private func get(_ path: String, port: Int) throws -> (status: String, text: String) {
    let connection = try LineConnection(host: "127.0.0.1", port: port, timeout: .seconds(5))
    try connection.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8))
    var lines: [String] = []
    while let line = try? connection.readLine(timeout: .seconds(5)) {
        lines.append(String(decoding: line, as: UTF8.self).trimmingCharacters(in: ["\r"]))
    }
    return (lines.first ?? "", lines.dropFirst().joined(separator: "\n"))
}

/// The port in the `kvod inspector on http://HOST:PORT/` line.
private func inspectorPort(_ stdout: String) -> Int? {
    guard let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix("kvod inspector on http://") }),
        let colon = line.lastIndex(of: ":")
    else { return nil }
    return Int(line[line.index(after: colon)...].dropLast())
}

@Suite(.serialized) struct InspectorTests {
    @Test func theWebPortServesThePageBeforeTheListeningLine() throws {
        let server = try KVODProcess.start(["--web-port", "0"], defaultModel: true)
        let lines = server.stdoutText.split(separator: "\n")
        #expect(lines.last?.hasPrefix("kvod listening on ") == true, "listening stays the last line: \(lines)")
        let port = try #require(inspectorPort(server.stdoutText), "\(server.stdoutText)")
        let page = try get("/", port: port)
        #expect(page.status == "HTTP/1.1 200 OK")
        #expect(page.text.contains(#"<meta name="kvod-address" content="127.0.0.1:\#(server.port)">"#))
        #expect(page.text.contains("connect-src ws://127.0.0.1:\(server.port)"))
        let client = try get("/kvod.js", port: port)
        #expect(client.text.contains("export async function connect("))
        #expect(try get("/favicon.ico", port: port).status == "HTTP/1.1 404 Not Found")
        #expect(try server.client().call("ping") == "pong", "the protocol port is unaffected")
    }

    @Test func theEnvironmentAndTheConfigFileSetTheWebPortToo() throws {
        let scratch = try ScratchDirectory("inspector")
        let file = try scratch.write("kvod.json", #"{"web-port": 0}"#)
        let fromFile = try KVODProcess.start(["--config", file])
        #expect(inspectorPort(fromFile.stdoutText) != nil, "\(fromFile.stdoutText)")
        let fromEnvironment = try KVODProcess.start(environment: ["KVOD_WEB_PORT": "0"])
        #expect(inspectorPort(fromEnvironment.stdoutText) != nil, "\(fromEnvironment.stdoutText)")
        let settings = try printedConfiguration(["--web-port", "8181"])
        #expect(settings["web-port"]! == ("8181", "--web-port"))
        #expect(try printedConfiguration([])["web-port"]! == ("(none)", "default"))
    }

    @Test func withoutWebPortThereIsNoInspector() throws {
        let server = try KVODProcess.start()
        #expect(!server.stdoutText.contains("inspector"))
    }

    @Test func aWebPortInUseStopsKvodWithAMessage() throws {
        let holder = try KVODProcess.start()
        let result = try runKVOD(["--empty", "--port", "0", "--web-port", String(holder.port)])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot listen for the inspector on 127.0.0.1:\(holder.port)"), "\(result.stderr)")
    }
}
