// `format`: each directive, widths and zero padding, correct rounding of `%.Nf` (checked against the C library on
// seeded random doubles), and null for arguments that do not suit their directive.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ObjectGraph
import Testing
import TestSupport

extension ExpressionTests {
    @Suite struct Format {
        @Test(
            "directives",
            arguments: [
                ("format(\"%d\", 42)", Value.string("42")),
                ("format(\"%d\", -42)", .string("-42")),
                ("format(\"%5d\", 42)", .string("   42")),
                ("format(\"%05d\", -42)", .string("-0042")),
                ("format(\"%2d\", 12345)", .string("12345")),
                ("format(\"%d\", 3.0)", .string("3")),
                ("format(\"%d\", 3.5)", .null),
                ("format(\"%d\", \"3\")", .null),
                ("format(\"%d\", n)", .null),
                ("format(\"%s\", s)", .string("abc")),
                ("format(\"%s|%s|%s\", 1, 2.5, t)", .string("1|2.5|true")),
                ("format(\"%s\", n)", .string("")),
                ("format(\"%5s\", \"ab\")", .string("   ab")),
                ("format(\"%3s\", \"é\")", .string("  é")),
                ("format(\"%s\", arr)", .null),
                ("format(\"%x\", 255)", .string("ff")),
                ("format(\"%X\", 255)", .string("FF")),
                ("format(\"%02X\", 5)", .string("05")),
                ("format(\"%02X\", 255)", .string("FF")),
                ("format(\"%04x\", 4095)", .string("0fff")),
                ("format(\"%4X\", 10)", .string("   A")),
                ("format(\"%x\", -1)", .null),
                ("format(\"%X\", 2.5)", .null),
                ("format(\"#%02X%02X%02X\", 255, 128, 0)", .string("#FF8000")),
                ("format(\"100%%\")", .string("100%")),
                ("format(\"%d%%\", 50)", .string("50%")),
                ("format(\"a%sb\", \"\")", .string("ab")),
                ("format(\"plain\")", .string("plain")),
                ("format(fmt, 1)", .null),
                ("format(7)", .null),
                ("format(bad, 1)", .null),
                ("format(two, 1)", .null),
                ("format(two, 1, 2)", .string("1 2")),
            ])
        func directive(text: String, expected: Value) throws {
            var values = ExpressionTests.values
            values["bad"] = "%q"
            values["two"] = "%d %d"
            #expect(try ExpressionTests.evaluate(text, values) == expected)
        }

        @Test(
            "%f and %.Nf round the exact binary value, half away from zero",
            arguments: [
                ("format(\"%f\", 3.14159)", "3.141590"),
                ("format(\"%.2f\", 2.675)", "2.67"),
                ("format(\"%.2f\", 0.125)", "0.13"),
                ("format(\"%.2f\", -0.125)", "-0.13"),
                ("format(\"%.0f\", 2.5)", "3"),
                ("format(\"%.0f\", 0.5)", "1"),
                ("format(\"%.0f\", 0.49999999999999994)", "0"),
                ("format(\"%.0f\", 9.5)", "10"),
                ("format(\"%.1f\", 0.05)", "0.1"),
                ("format(\"%.1f\", 0.25)", "0.3"),
                ("format(\"%.3f\", 1.0005)", "1.000"),
                ("format(\"%.2f\", -1.005)", "-1.00"),
                ("format(\"%.2f\", -0.001)", "-0.00"),
                ("format(\"%.2f\", 999.995)", "1000.00"),
                ("format(\"%.17f\", 0.1)", "0.10000000000000001"),
                ("format(\"%.17f\", 5e-324)", "0.00000000000000000"),
                ("format(\"%.2f\", 1e20)", "100000000000000000000.00"),
                ("format(\"%.2f\", 7)", "7.00"),
                ("format(\"%.0f\", -7)", "-7"),
                ("format(\"%.3f\", big)", "9223372036854775807.000"),
                ("format(\"%08.3f\", -3.14159)", "-003.142"),
                ("format(\"%8.3f\", 3.14159)", "   3.142"),
                ("format(\"%.1f\", 0)", "0.0"),
                ("format(\"%.1f\", -0.0)", "-0.0"),
            ])
        func fixed(text: String, expected: String) throws {
            #expect(try ExpressionTests.evaluate(text) == .string(expected))
        }

        @Test func fixedRejectsNonNumbers() throws {
            #expect(try ExpressionTests.evaluate("format(\"%.2f\", s)") == .null)
            #expect(try ExpressionTests.evaluate("format(\"%f\", n)") == .null)
            #expect(try ExpressionTests.evaluate("format(\"%f\", t)") == .null)
        }

        @Test func fixedPrintsTheLargestDoubleInFull() throws {
            guard case .string(let text) = try ExpressionTests.evaluate("format(\"%.0f\", 1.7976931348623157e308)")
            else {
                Issue.record("expected a string")
                return
            }
            #expect(text.count == 309)
            #expect(text.hasPrefix("179769313486231570814527423731704356798070567525844996598917476803157260780028"))
        }

        /// glibc's printf is exact too, but rounds exact ties to even where we round them away from zero; away
        /// from ties both must agree digit for digit.
        @Test(arguments: [0, 1, 2, 3, 6, 10, 17])
        func fixedMatchesTheCLibrary(places: Int) throws {
            let expression = try Expression.parse("format(\"%.\(places)f\", x)")
            var generator = SeededRandom(seed: UInt64(places) + 1)
            var ties = 0
            for _ in 0..<2_000 {
                let bits = generator.next()
                let scale = Double(Int64(bitPattern: bits >> 40) % 40 - 20)
                let x = Double(Int64(bitPattern: bits)) / 0x1p63 * pow(10, scale)
                let ours = expression.evaluate { _ in .double(x) }
                // The exact expansion (glibc prints every digit when asked): a tie is a 5 and nothing after it.
                let exact = Self.cFormat(x, places: places + 120)
                let tail = try #require(exact.split(separator: ".").last).dropFirst(places)
                if tail.first == "5" && tail.dropFirst().allSatisfy({ $0 == "0" }) {
                    ties += 1
                    continue
                }
                #expect(ours == .string(Self.cFormat(x, places: places)), "x = \(x)")
            }
            #expect(ties < 100)
        }

        private static func cFormat(_ x: Double, places: Int) -> String {
            var buffer = [CChar](repeating: 0, count: 1024)
            _ = withVaList([x]) { vsnprintf(&buffer, buffer.count, "%.\(places)f", $0) }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
