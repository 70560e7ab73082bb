// Evaluation of operators: int/double arithmetic, overflow, division by zero, null propagation, string
// concatenation, comparisons across types, truthiness, and which key paths evaluation reads.

import ObjectGraph
import Testing

extension ExpressionTests {
    @Suite struct Evaluation {
        @Test(
            "arithmetic keeps ints exact, falls back to double, and yields null on errors",
            arguments: [
                ("1 + 2", Value.int(3)),
                ("2 * 3 - 4", .int(2)),
                ("(2 + 3) * 4", .int(20)),
                ("10 - 2 - 3", .int(5)),
                ("2 * 3 % 4", .int(2)),
                ("7 % 3", .int(1)),
                ("-7 % 3", .int(-1)),
                ("7 % -3", .int(1)),
                ("small % -1", .int(0)),
                ("7 / 2", .double(3.5)),
                ("6 / 3", .double(2.0)),
                ("1 + 2.5", .double(3.5)),
                ("i * d", .double(17.5)),
                ("d - i", .double(-4.5)),
                ("7.5 % 2", .double(1.5)),
                ("-7.5 % 2", .double(-1.5)),
                ("big + 1", .double(0x1p63)),
                ("big * 2", .double(0x1p64)),
                ("small - 1", .double(-0x1p63)),
                ("-small", .double(0x1p63)),
                ("-i", .int(-7)),
                ("-d", .double(-2.5)),
                ("1 / 0", .null),
                ("1.5 / 0", .null),
                ("1 / 0.0", .null),
                ("0 / 0", .null),
                ("1 % 0", .null),
                ("1.5 % 0", .null),
                ("1e308 * 10", .null),
                ("-1e308 - 1e308", .null),
                ("n + 1", .null),
                ("1 - n", .null),
                ("n * n", .null),
                ("-n", .null),
                ("t + 1", .null),
                ("-s", .null),
                ("-t", .null),
                ("arr * 2", .null),
                ("obj - 1", .null),
                ("s - 1", .null),
                ("(1 + n) * 2 + 3", .null),
            ])
        func arithmetic(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test(
            "+ with a string concatenates string forms",
            arguments: [
                ("s + 1", Value.string("abc1")),
                ("1 + s", .string("1abc")),
                ("s + d", .string("abc2.5")),
                ("s + 42.0", .string("abc42.0")),
                ("s + 0.1", .string("abc0.1")),
                ("\"\" + (0.1 + 0.2)", .string("0.30000000000000004")),
                ("\"x\" + 1e-5", .string("x1e-05")),
                ("\"x\" + 1e16", .string("x1e+16")),
                ("\"x\" + -0.0", .string("x-0.0")),
                ("s + n", .string("abc")),
                ("n + s", .string("abc")),
                ("s + t", .string("abctrue")),
                ("f + s", .string("falseabc")),
                ("1 + 2 + s", .string("3abc")),
                ("s + 1 + 2", .string("abc12")),
                ("s + big", .string("abc9223372036854775807")),
                ("s + arr", .null),
                ("obj + s", .null),
            ])
        func concatenation(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test(
            "comparisons: numbers across int and double, strings by scalars, mixed types",
            arguments: [
                ("1 == 1.0", Value.bool(true)),
                ("1 != 1.0", .bool(false)),
                ("1 < 1.5", .bool(true)),
                ("2.5 >= 2", .bool(true)),
                ("i <= 7", .bool(true)),
                ("i > 7", .bool(false)),
                ("big == 9223372036854775807.0", .bool(false)),
                ("big < 9223372036854775807.0", .bool(true)),
                ("9007199254740993 > 9007199254740992.0", .bool(true)),
                ("small == -9223372036854775808.0", .bool(true)),
                ("s == \"abc\"", .bool(true)),
                ("s < \"abd\"", .bool(true)),
                ("s > \"ab\"", .bool(true)),
                ("\"B\" < \"a\"", .bool(true)),
                ("\"\" < \"a\"", .bool(true)),
                ("\"é\" == \"e\\u0301\"", .bool(false)),
                ("\"é\" > \"f\"", .bool(true)),
                ("1 == \"1\"", .bool(false)),
                ("1 != \"1\"", .bool(true)),
                ("t == true", .bool(true)),
                ("t != f", .bool(true)),
                ("t == 1", .bool(false)),
                ("n == null", .bool(true)),
                ("n != null", .bool(false)),
                ("n == 0", .bool(false)),
                ("n != 0", .bool(true)),
                ("missing == null", .bool(true)),
                ("arr == arr", .bool(true)),
                ("obj == obj", .bool(true)),
                ("obj == 3", .bool(false)),
                ("t < f", .null),
                ("1 < \"a\"", .null),
                ("n < 1", .null),
                ("n <= n", .null),
                ("arr > arr", .null),
            ])
        func comparison(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test(
            "logic and the conditional use truthiness",
            arguments: [
                ("t && f", Value.bool(false)),
                ("t || f", .bool(true)),
                ("i && s", .bool(true)),
                ("!n", .bool(true)),
                ("!s", .bool(false)),
                ("!\"\"", .bool(true)),
                ("!0", .bool(true)),
                ("!0.5", .bool(false)),
                ("!arr", .bool(false)),
                ("!obj", .bool(false)),
                ("t ? 1 : 2", .int(1)),
                ("f ? 1 : 2", .int(2)),
                ("n ? 1 : 2", .int(2)),
                ("0 ? 1 : 2", .int(2)),
                ("0.0 ? 1 : 2", .int(2)),
                ("-0.5 ? 1 : 2", .int(1)),
                ("\"\" ? 1 : 2", .int(2)),
                ("s ? 1 : 2", .int(1)),
                ("arr ? 1 : 2", .int(1)),
                ("obj ? 1 : 2", .int(1)),
                ("i > 5 ? \"big\" : \"small\"", .string("big")),
                ("f ? 1 : f ? 2 : 3", .int(3)),
                ("t ? f ? 1 : 2 : 3", .int(2)),
            ])
        func truthiness(text: String, expected: Value) throws {
            #expect(try ExpressionTests.evaluate(text) == expected)
        }

        @Test func onlyTheTakenBranchIsEvaluated() throws {
            var reads: [String] = []
            let lookup: (String) -> Value = { path in
                reads.append(path)
                return ExpressionTests.values[path] ?? .null
            }
            #expect(try Expression.parse("t ? a : b").evaluate(lookup) == .null)
            #expect(try Expression.parse("f && c || t").evaluate(lookup) == .bool(true))
            #expect(try Expression.parse("t || e").evaluate(lookup) == .bool(true))
            #expect(reads == ["t", "a", "f", "t", "t"])
        }

        @Test func handBuiltTreesNeverTrap() {
            let trees: [Expression] = [
                .call(.pow, []),
                .call(.clamp, [.literal(1)]),
                .call(.format, [.literal("%d"), .literal(1), .literal(2)]),
                .binary(.add, .literal(.array([])), .literal(.record(Record()))),
                .unary(.negate, .literal(.object(1))),
            ]
            for tree in trees {
                #expect(tree.evaluate { _ in .null } == .null)
            }
            #expect(Expression.call(.pow, []).description == "pow()")
        }

        @Test func literalsEvaluateToThemselves() throws {
            #expect(try ExpressionTests.evaluate("\"a\\tb\\u00e9\"") == .string("a\tbé"))
            #expect(try ExpressionTests.evaluate("null") == .null)
            #expect(try ExpressionTests.evaluate("-9223372036854775807 - 1") == .int(.min))
            #expect(try ExpressionTests.evaluate("2.5e-3") == .double(0.0025))
        }
    }
}
