// `kvoctl ping` and `kvoctl hello`: liveness and identification requests.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Checks that kvod answers.
    struct Ping: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that kvod answers; prints pong.",
            discussion: """
                EXAMPLE:
                  kvoctl ping --port 7070
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let client = try self.connection.connect()
            let result: JSONValue
            do {
                result = try client.call("ping")
            } catch {
                throw client.report(error)
            }
            try Output.line(result.stringValue ?? JSONWriter.encodeString(result))
        }
    }

    /// Shows what kvod says about itself.
    struct Hello: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print kvod's hello result, e.g. {\"server\":\"kvod\",\"version\":\"0.1.0\",\"protocol\":1}.",
            discussion: """
                EXAMPLE:
                  kvoctl hello --client my-script
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        @Option(help: "The client name to introduce kvoctl as.")
        var client = "kvoctl"

        @OptionGroup var output: ValueOptions

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            // The token, if any, goes in this hello itself, so the result shows its access.
            let connectedClient = try self.connection.connect(authenticate: false)
            let result: JSONValue
            do {
                var params: JSONObject = ["client": .string(self.client)]
                if let token = self.connection.resolvedToken { params["token"] = .string(token) }
                result = try connectedClient.call("hello", .object(params))
            } catch {
                throw connectedClient.report(error)
            }
            try self.output.print(result)
        }
    }
}
