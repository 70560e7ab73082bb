// Every built-in function except `format` (ExpressionFormatTests.swift), with its edge cases: null and non-number
// arguments, domain errors, int-preserving results, and correct decimal rounding.

import ObjectGraph
import Testing

extension ExpressionTests {
    @Suite struct Functions {
        @Test(
            "math functions return doubles, null outside their domain",
            arguments: [
                ("pow(2, 10)", Value.double(1024)),
                ("pow(2, -1)", .double(0.5)),
                ("pow(2.25, 0.5)", .double(1.5)),
                ("pow(-8, 1 / 3)", .null),
                ("pow(0, -1)", .null),
                ("pow(10, 400)", .null),
                ("pow(n, 2)", .null),
                ("pow(2, s)", .null),
                ("cbrt(27)", .double(3)),
                ("cbrt(-8)", .double(-2)),
                ("cbrt(0.125)", .double(0.5)),
                ("cbrt(1e300)", .double(1e100)),
                ("cbrt(0)", .double(0)),
                ("cbrt(t)", .null),
                ("sqrt(16)", .double(4)),
                ("sqrt(2.25)", .double(1.5)),
                ("sqrt(-1)", .null),
                ("sqrt(n)", .null),
                ("exp(0)", .double(1)),
                ("exp(1000)", .null),
                ("log(1)", .double(0)),
                ("log(0)", .null),
                ("log(-1)", .null),
                ("sin(0)", .double(0)),
                ("cos(0)", .double(1)),
                ("tan(0)", .double(0)),
                ("atan2(0, -1)", .double(.pi)),
                ("atan2(0, 1)", .double(0)),
                ("atan2(1, n)", .null),
            ])
        func math(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test(
            "abs, min, max and clamp keep ints when every argument is an int",
            arguments: [
                ("abs(-3)", Value.int(3)),
                ("abs(3)", .int(3)),
                ("abs(-2.5)", .double(2.5)),
                ("abs(small)", .double(0x1p63)),
                ("abs(s)", .null),
                ("min(3, 1, 2)", .int(1)),
                ("min(5)", .int(5)),
                ("min(3, 1.5)", .double(1.5)),
                ("min(1, 1.5)", .double(1)),
                ("max(1, 2.5, 2)", .double(2.5)),
                ("max(3, 2.5)", .double(3)),
                ("max(big, 9223372036854775807.0)", .double(0x1p63)),
                ("min(1, n)", .null),
                ("max(1, s)", .null),
                ("max(t)", .null),
                ("clamp(5, 0, 10)", .int(5)),
                ("clamp(-1, 0, 10)", .int(0)),
                ("clamp(11, 0, 10)", .int(10)),
                ("clamp(0.5, 0, 1)", .double(0.5)),
                ("clamp(-0.5, 0, 1)", .double(0)),
                ("clamp(2, 0, 1.5)", .double(1.5)),
                ("clamp(1, 0, 1.5)", .double(1)),
                ("clamp(1, 1, 1)", .int(1)),
                ("clamp(1, 2, 0)", .null),
                ("clamp(n, 0, 1)", .null),
                ("clamp(1, 0, s)", .null),
            ])
        func integerPreserving(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test(
            "round, floor and ceil: ints when they fit, digits rounded from the exact value",
            arguments: [
                ("round(2.5)", Value.int(3)),
                ("round(-2.5)", .int(-3)),
                ("round(2.4999)", .int(2)),
                ("round(0.5)", .int(1)),
                ("round(-0.4)", .int(0)),
                ("round(7)", .int(7)),
                ("round(1e300)", .double(1e300)),
                ("round(n)", .null),
                ("round(s)", .null),
                ("round(2.675, 2)", .double(2.67)),
                ("round(1.005, 2)", .double(1.0)),
                ("round(0.125, 2)", .double(0.13)),
                ("round(-0.125, 2)", .double(-0.13)),
                ("round(2.5, 0)", .double(3)),
                ("round(1234.5678, -2)", .double(1200)),
                ("round(1250, -2)", .double(1300)),
                ("round(7, 2)", .double(7)),
                ("round(999.995, 2)", .double(1000)),
                ("round(0.1 + 0.2, 15)", .double(0.3)),
                ("round(1.23, 400)", .double(1.23)),
                ("round(1.23, -400)", .double(0)),
                ("round(1.25, 1.0)", .double(1.3)),
                ("round(1.25, 1.5)", .null),
                ("round(1.25, n)", .null),
                ("round(n, 1)", .null),
                ("round(1.7976931348623157e308, -308)", .null),
                ("floor(2.7)", .int(2)),
                ("floor(-2.1)", .int(-3)),
                ("floor(5)", .int(5)),
                ("floor(1e300)", .double(1e300)),
                ("floor(s)", .null),
                ("ceil(2.1)", .int(3)),
                ("ceil(-2.7)", .int(-2)),
                ("ceil(-0.5)", .int(0)),
                ("ceil(n)", .null),
            ])
        func rounding(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test(
            "conversions: int, double, string",
            arguments: [
                ("int(3.9)", Value.int(3)),
                ("int(-3.9)", .int(-3)),
                ("int(7)", .int(7)),
                ("int(\"42\")", .int(42)),
                ("int(\" -42 \")", .int(-42)),
                ("int(\"+5\")", .int(5)),
                ("int(\"3.7\")", .int(3)),
                ("int(\"1e3\")", .int(1000)),
                ("int(\".5\")", .int(0)),
                ("int(\"99999999999999999999\")", .null),
                ("int(\"abc\")", .null),
                ("int(\"\")", .null),
                ("int(\"1e\")", .null),
                ("int(\"inf\")", .null),
                ("int(\"nan\")", .null),
                ("int(\"0x10\")", .null),
                ("int(\"1 2\")", .null),
                ("int(t)", .null),
                ("int(n)", .null),
                ("int(1e300)", .null),
                ("double(7)", .double(7)),
                ("double(2.5)", .double(2.5)),
                ("double(\"2.5\")", .double(2.5)),
                ("double(\"42\")", .double(42)),
                ("double(\"1e999\")", .null),
                ("double(\"x\")", .null),
                ("double(n)", .null),
                ("double(arr)", .null),
                ("string(42)", .string("42")),
                ("string(2.5)", .string("2.5")),
                ("string(42.0)", .string("42.0")),
                ("string(n)", .string("")),
                ("string(t)", .string("true")),
                ("string(s)", .string("abc")),
                ("string(arr)", .null),
                ("string(obj)", .null),
            ])
        func conversion(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test(
            "string functions and hex",
            arguments: [
                ("len(\"héllo\")", Value.int(5)),
                ("len(\"👍🏽\")", .int(1)),
                ("len(\"\")", .int(0)),
                ("len(arr)", .int(2)),
                ("len(7)", .null),
                ("len(n)", .null),
                ("upper(\"abc\")", .string("ABC")),
                ("upper(\"straße\")", .string("STRASSE")),
                ("lower(\"ÀB\")", .string("àb")),
                ("upper(7)", .null),
                ("lower(n)", .null),
                ("trim(\"  a b \\n\")", .string("a b")),
                ("trim(\"\\t\")", .string("")),
                ("trim(\"x\")", .string("x")),
                ("trim(arr)", .null),
                ("hex(255, 2)", .string("FF")),
                ("hex(255, 4)", .string("00FF")),
                ("hex(4096, 2)", .string("1000")),
                ("hex(0, 0)", .string("0")),
                ("hex(255.0, 2)", .string("FF")),
                ("hex(big, 0)", .string("7FFFFFFFFFFFFFFF")),
                ("hex(-1, 2)", .null),
                ("hex(2.5, 2)", .null),
                ("hex(1, 65)", .null),
                ("hex(1, -1)", .null),
                ("hex(s, 2)", .null),
            ])
        func strings(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }
    }
}
