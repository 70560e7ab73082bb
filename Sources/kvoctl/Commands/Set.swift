// `kvoctl set PATH VALUE`: one `set` request; VALUE is JSON when it parses as JSON, else a string.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Stores a value at a key path.
    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a value at a key path and print the result, e.g. {\"seq\":12}.",
            usage: "kvoctl set [--host <host>] [--port <port>] [--timeout <seconds>] [--string] <path> <value>",
            discussion: """
                VALUE is parsed as JSON; when it is not valid JSON it is stored as a string, so `kvoctl set name \
                Alice` stores "Alice" while `kvoctl set n 42` stores the number 42. Use --string to store text that \
                looks like JSON (`kvoctl set --string zip 75001`). A VALUE that starts with a dash is still a value \
                (`kvoctl set delta -7`). Missing or null intermediate objects on the path \
                are created. The printed result is the server's JSON result: the mutation's seq, plus the stored \
                value when validation changed it.

                EXAMPLES:
                  kvoctl set person.name Alice
                  kvoctl set person.address '{"city":"Paris","zip":"75001"}'
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        @Flag(name: .shortAndLong, help: "Store VALUE as a string even when it parses as JSON.")
        var string = false

        @Argument(help: "The key path, e.g. person.address.city.")
        var path: String

        // Collected with .allUnrecognized so that a negative number (`kvoctl set n -7`) is a value, not an option.
        @Argument(
            parsing: .allUnrecognized,
            help: ArgumentHelp("The value: JSON, or else a string (quote it when it has spaces).", valueName: "value"))
        var values: [String] = []

        /// Rejects invalid values with a ValidationError (exit status 64).
        func validate() throws {
            guard self.values.count == 1 else {
                throw ValidationError(
                    self.values.isEmpty
                        ? "Missing expected argument '<value>'."
                        : "Expected one VALUE, got \(self.values.count) (quote a value that has spaces).")
            }
        }

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let text = self.values[0]
            let value = self.string ? JSONValue.string(text) : parseJSONOrString(text)
            let client = try self.connection.connect()
            let result: JSONValue
            do {
                result = try client.call("set", ["path": .string(self.path), "value": value])
            } catch {
                throw self.connection.report(error)
            }
            try Output.line(JSONWriter.encodeString(result))
        }
    }
}
