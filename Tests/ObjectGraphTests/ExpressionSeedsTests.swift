// The seeds' computed keys written in the expression language: LabColor's Lab-to-RGB chain (redComponent,
// greenComponent, blueComponent from l/a/b, then the hex `color`) and Person's fullName. Expected values are
// computed here with the same Swift math, operation for operation.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ObjectGraph
import Testing

extension ExpressionTests {
    @Suite struct Seeds {
        /// `inv(t)` of the seeds, written inline for an argument `t`.
        static func inverse(_ t: String) -> String {
            "(\(t) > 6 / 29 ? pow(\(t), 3) : 3 * pow(6 / 29, 2) * (\(t) - 4 / 29))"
        }

        static let fy = "(lComponent + 16) / 116"

        /// The computed keys of LabColor as a model file would declare them.
        static let definitions: [(key: String, text: String)] = [
            ("redComponent", "100 * " + Self.inverse(Self.fy)),
            ("greenComponent", "95.047 * " + Self.inverse("\(Self.fy) + aComponent / 500")),
            ("blueComponent", "108.883 * " + Self.inverse("\(Self.fy) - bComponent / 200")),
            (
                "color",
                """
                format("#%02X%02X%02X", round(clamp(redComponent * 0.01, 0, 1) * 255), \
                round(clamp(greenComponent * 0.01, 0, 1) * 255), round(clamp(blueComponent * 0.01, 0, 1) * 255))
                """
            ),
        ]

        /// Evaluates every computed key in order, each one reading the stored components and the keys before it.
        static func evaluate(l: Value, a: Value, b: Value) throws -> [String: Value] {
            var values: [String: Value] = ["lComponent": l, "aComponent": a, "bComponent": b]
            for (key, text) in Self.definitions {
                let expression = try Expression.parse(text)
                values[key] = expression.evaluate { values[$0] ?? .null }
            }
            return values
        }

        static func swiftInverse(_ t: Double) -> Double {
            t > 6.0 / 29 ? pow(t, 3) : 3 * pow(6.0 / 29, 2) * (t - 4.0 / 29)
        }

        static func swiftChannel(_ component: Double) -> String {
            let byte = Int((Swift.min(Swift.max(component * 0.01, 0), 1) * 255).rounded(.toNearestOrAwayFromZero))
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }

        @Test(
            "Lab to RGB matches the same computation in Swift",
            arguments: [
                (Value.int(53), Value.int(0), Value.int(0)),
                (.int(0), .int(0), .int(0)),
                (.int(100), .int(0), .int(0)),
                (.int(5), .int(0), .int(0)),
                (.double(53.2), .double(80.1), .double(67.2)),
                (.double(32.3), .double(79.2), .double(-107.9)),
                (.double(97.1), .double(-21.6), .double(94.5)),
                (.int(50), .int(-128), .int(127)),
            ])
        func labColor(l: Value, a: Value, b: Value) throws {
            let number: (Value) -> Double = { value in
                switch value {
                case .int(let int): Double(int)
                case .double(let double): double
                default: .nan
                }
            }
            let fy = (number(l) + 16) / 116
            let red = 100 * Self.swiftInverse(fy)
            let green = 95.047 * Self.swiftInverse(fy + number(a) / 500)
            let blue = 108.883 * Self.swiftInverse(fy - number(b) / 200)
            let values = try Self.evaluate(l: l, a: a, b: b)
            #expect(values["redComponent"] == .double(red))
            #expect(values["greenComponent"] == .double(green))
            #expect(values["blueComponent"] == .double(blue))
            let color = "#" + Self.swiftChannel(red) + Self.swiftChannel(green) + Self.swiftChannel(blue)
            #expect(values["color"] == .string(color))
        }

        @Test func labColorByHand() throws {
            // L=53: fy = 69/116 ≈ 0.5948, above 6/29, so red = 100 · fy³ ≈ 21.05; green and blue scale the same
            // cube by 0.95047 and 1.08883; the channels are 0.2105·255 ≈ 54, 0.2000·255 ≈ 51, 0.2292·255 ≈ 58.
            let values = try Self.evaluate(l: 53, a: 0, b: 0)
            guard case .double(let red) = values["redComponent"] else {
                Issue.record("redComponent is not a double")
                return
            }
            #expect(Swift.abs(red - 21.05) < 0.005)
            #expect(values["color"] == .string("#36333A"))
            let black = try Self.evaluate(l: 0, a: 0, b: 0)
            #expect(black["color"] == .string("#000000"))
            let white = try Self.evaluate(l: 100, a: 0, b: 0)
            // The seeds' conversion stops at XYZ scaled to 0...100, so the D65 white point is not pure white.
            #expect(white["color"] == .string("#FFF2FF"))
        }

        @Test func labColorDependenciesAreItsKeyPaths() throws {
            let keyPaths = try Self.definitions.map { try Expression.parse($0.text).keyPaths }
            #expect(keyPaths[0] == ["lComponent"])
            #expect(keyPaths[1] == ["lComponent", "aComponent"])
            #expect(keyPaths[2] == ["lComponent", "bComponent"])
            #expect(keyPaths[3] == ["redComponent", "greenComponent", "blueComponent"])
        }

        @Test func labColorWithAMissingComponentIsNull() throws {
            let values = try Self.evaluate(l: .null, a: 0, b: 0)
            #expect(values["redComponent"] == .null)
            #expect(values["color"] == .null)
        }

        @Test func canonicalTextOfTheChainReparsesToTheSameTree() throws {
            for (_, text) in Self.definitions {
                let expression = try Expression.parse(text)
                #expect(try Expression.parse(expression.description) == expression)
            }
        }

        @Test(
            "fullName concatenates",
            arguments: [
                (Value.string("Ada"), Value.string("Lovelace"), Value.string("Ada Lovelace")),
                (.string("Ada"), .null, .string("Ada ")),
                (.null, .null, .string(" ")),
                (.string("Agent"), .int(7), .string("Agent 7")),
            ])
        func fullName(first: Value, last: Value, expected: Value) throws {
            let expression = try Expression.parse("firstName + \" \" + lastName")
            #expect(expression.keyPaths == ["firstName", "lastName"])
            let values = ["firstName": first, "lastName": last]
            #expect(expression.evaluate { values[$0] ?? .null } == expected)
        }
    }
}
