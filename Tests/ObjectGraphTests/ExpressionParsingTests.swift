// Parsing: precedence, associativity, canonical text, key paths, error offsets and messages, and the nesting limit.

import ObjectGraph
import Testing

extension ExpressionTests {
    @Suite struct Parsing {
        @Test(
            "canonical text keeps only the parentheses precedence needs",
            arguments: [
                ("1 + 2 * 3", "1 + 2 * 3"),
                ("(1 + 2) * 3", "(1 + 2) * 3"),
                ("1 - (2 - 3)", "1 - (2 - 3)"),
                ("(1 - 2) - 3", "1 - 2 - 3"),
                ("a/b%c", "a / b % c"),
                ("a / (b * c)", "a / (b * c)"),
                ("a || b && c", "a || b && c"),
                ("(a || b) && c", "(a || b) && c"),
                ("a ? b : c ? d : e", "a ? b : c ? d : e"),
                ("(a ? b : c) ? d : e", "(a ? b : c) ? d : e"),
                ("a ? b ? c : d : e", "a ? b ? c : d : e"),
                ("a ? (b || c) : d", "a ? b || c : d"),
                ("-x * y", "-x * y"),
                ("-(x * y)", "-(x * y)"),
                ("!a && b", "!a && b"),
                ("!(a && b)", "!(a && b)"),
                ("!!a", "!!a"),
                ("a == b && c != d", "a == b && c != d"),
                ("a < b == c >= d", "a < b == c >= d"),
                ("(a == b) == c", "(a == b) == c"),
                ("a == (b == c)", "a == (b == c)"),
                ("a + b <= c * d", "a + b <= c * d"),
                ("a > b", "a > b"),
                ("x % 3 == 0", "x % 3 == 0"),
                ("pow( x ,2 )", "pow(x, 2)"),
                ("min(a, b, c)", "min(a, b, c)"),
                ("-5", "-5"),
                ("- 5.5", "-5.5"),
                ("2 - -5", "2 - -5"),
                ("-(-5)", "5"),
                ("1.5e3", "1500.0"),
                ("1E-5", "1e-05"),
                ("\"a\\\"b\\\\c\\n\\t\\r\\u0041\\u0001\"", "\"a\\\"b\\\\c\\n\\t\\rA\\u0001\""),
                ("employees.@sum.salary", "employees.@sum.salary"),
                ("true || false || null", "true || false || null"),
                ("((a))", "a"),
            ])
        func canonicalText(input: String, canonical: String) throws {
            let expression = try Expression.parse(input)
            #expect(expression.description == canonical)
            #expect(try Expression.parse(canonical) == expression)
        }

        @Test func treesFollowPrecedenceAndAssociativity() throws {
            let (a, b, c) = (Expression.keyPath("a"), Expression.keyPath("b"), Expression.keyPath("c"))
            let product = Expression.binary(.multiply, .literal(2), .literal(3))
            #expect(try Expression.parse("1 + 2 * 3") == .binary(.add, .literal(1), product))
            #expect(try Expression.parse("a - b - c") == .binary(.subtract, .binary(.subtract, a, b), c))
            #expect(try Expression.parse("a || b || c") == .binary(.or, .binary(.or, a, b), c))
            #expect(try Expression.parse("a ? b : c ? a : b") == .conditional(a, b, .conditional(c, a, b)))
            #expect(try Expression.parse("-a") == .unary(.negate, a))
            #expect(try Expression.parse("-2") == .literal(-2))
            #expect(try Expression.parse("!a == b") == .binary(.equal, .unary(.not, a), b))
            #expect(try Expression.parse("\"x\"") == .literal("x"))
            #expect(try Expression.parse("null") == .literal(.null))
            #expect(try Expression.parse("pow") == .keyPath("pow"))
            #expect(try Expression.parse("pow (a, 2)") == .call(.pow, [a, .literal(2)]))
        }

        @Test("every binary operator parses", arguments: Expression.BinaryOperator.allCases)
        func binaryOperator(_ op: Expression.BinaryOperator) throws {
            let expression = try Expression.parse("a \(op.rawValue) b")
            #expect(expression == .binary(op, .keyPath("a"), .keyPath("b")))
        }

        @Test("every function parses with its minimum and maximum arity", arguments: Expression.Function.allCases)
        func function(_ function: Expression.Function) throws {
            for count in [function.minimumArity, function.maximumArity ?? function.minimumArity + 3] {
                var arguments = (0..<count).map { "x\($0)" }
                if function == .format { arguments[0] = "fmt" }
                let expression = try Expression.parse("\(function.rawValue)(\(arguments.joined(separator: ", ")))")
                #expect(expression == .call(function, arguments.map { .keyPath($0) }))
            }
        }

        @Test(
            "key paths, with collection operators after the first key",
            arguments: [
                "a", "_x1.y_2", "a.b.c", "employees.@count", "employees.@sum.salary", "a.@avg.b.@max.c",
                "people.@distinctUnionOfObjects.name", "x.@unionOfArrays.y", "x.@distinctUnionOfArrays.y",
                "x.@distinctUnionOfSets.y", "x.@unionOfObjects.y", "x.@min.y",
            ])
        func keyPath(_ text: String) throws {
            #expect(try Expression.parse(text) == .keyPath(text))
        }

        @Test(
            "errors carry the character offset and a message",
            arguments: [
                ("(1 + 2", 6, "expected ')'"),
                ("((1 + 2) * 3", 12, "expected ')'"),
                ("1 + 2)", 5, "unexpected ')'"),
                ("foo(1)", 0, "unknown function 'foo'"),
                ("a.b(1)", 0, "unknown function 'a.b'"),
                ("2 * pow(x)", 4, "'pow' takes 2 arguments"),
                ("sqrt()", 0, "'sqrt' takes 1 argument"),
                ("min()", 0, "'min' takes at least 1 argument"),
                ("round(1, 2, 3)", 0, "'round' takes 1 or 2 arguments"),
                ("clamp(1, 2)", 0, "'clamp' takes 3 arguments"),
                ("format()", 0, "'format' takes at least 1 argument"),
                ("1 2", 2, "unexpected '2'"),
                ("a b", 2, "unexpected 'b'"),
                ("a (b)", 0, "unknown function 'a'"),
                ("\"abc", 0, "unterminated string"),
                ("x + \"abc\\\"", 4, "unterminated string"),
                ("", 0, "empty expression"),
                ("   ", 0, "empty expression"),
                ("a.", 2, "expected a key after '.'"),
                ("a.b.", 4, "expected a key after '.'"),
                ("a..b", 2, "expected a key after '.'"),
                ("a.1", 2, "expected a key after '.'"),
                ("@count", 0, "unexpected character '@'"),
                ("a.@foo", 2, "unknown collection operator '@foo'"),
                ("1 +", 3, "expected an expression"),
                ("pow(1,)", 6, "unexpected ')'"),
                ("pow(1 2)", 6, "expected ',' or ')'"),
                ("a ? b", 5, "expected ':'"),
                ("a = b", 2, "unexpected '='; did you mean '=='?"),
                ("a # b", 2, "unexpected character '#'"),
                ("a & b", 2, "unexpected character '&'"),
                ("\"\\q\"", 1, "unknown escape '\\q'"),
                ("\"\\u12\"", 1, "expected 4 hex digits after '\\u'"),
                ("\"\\uD800\"", 1, "'\\uD800' is not a Unicode scalar"),
                ("1.", 2, "expected digits after '.'"),
                ("1e+", 3, "expected exponent digits"),
                (".5", 0, "unexpected character '.'"),
                ("true.x", 4, "unexpected character '.'"),
                ("99999999999999999999", 0, "integer '99999999999999999999' is out of range"),
                ("1e999", 0, "number '1e999' is out of range"),
                ("a < b < c", 6, "'<' cannot follow another comparison; use parentheses"),
                ("a == b != c", 7, "'!=' cannot follow another comparison; use parentheses"),
                ("format(\"%d\")", 0, "format string takes 1 argument, got 0"),
                ("format(\"%s\", 1, 2)", 0, "format string takes 1 argument, got 2"),
                ("format(\"%q\", 1)", 0, "format string: unknown directive '%q'"),
                ("format(\"%.18f\", 1)", 0, "format string: '%.18f': precision exceeds 17"),
                ("format(\"%.2d\", 1)", 0, "format string: '%.2d': a precision applies only to %f"),
                ("format(\"%05s\", 1)", 0, "format string: '%05s': %s cannot be zero-padded"),
                ("format(\"%99d\", 1)", 0, "format string: '%99d': width exceeds 64"),
                ("format(\"%\", 1)", 0, "format string: incomplete directive at the end"),
                ("format(\"%.f\", 1)", 0, "format string: expected digits after '%.'"),
                ("\"é\" + )", 6, "unexpected ')'"),
                ("\"e\u{301}\" + )", 6, "unexpected ')'"),
            ])
        func error(text: String, offset: Int, message: String) {
            #expect(ExpressionTests.parseError(text) == ExpressionError(offset: offset, message: message))
        }

        @Test func errorDescriptionHasAOneBasedColumn() {
            #expect(ExpressionTests.parseError("(1 + 2")?.description == "column 7: expected ')'")
        }

        @Test(
            "10k-deep input is rejected at the limit, without overflowing the stack",
            arguments: [
                String(repeating: "(", count: 10_000) + "1" + String(repeating: ")", count: 10_000),
                String(repeating: "-", count: 10_000) + "x",
                String(repeating: "!", count: 10_000) + "x",
                String(repeating: "abs(", count: 10_000) + "x" + String(repeating: ")", count: 10_000),
                String(repeating: "a ? b : ", count: 10_000) + "c",
                "1" + String(repeating: " + 1", count: 10_000),
                String(repeating: "(", count: 10_000),
            ])
        func deepNesting(_ text: String) {
            let error = ExpressionTests.parseError(text)
            #expect(error?.message == "expression nested too deeply (limit 64 levels)")
        }

        @Test func nestingUpToTheLimitParses() throws {
            let depth = Expression.maxDepth - 1
            let text = String(repeating: "(", count: depth) + "x" + String(repeating: ")", count: depth)
            #expect(try Expression.parse(text) == .keyPath("x"))
            #expect(ExpressionTests.parseError("(" + text + ")") == nil)
            #expect(ExpressionTests.parseError("((" + text + "))")?.offset == Expression.maxDepth)
            let wide = "min(" + (0..<5_000).map(String.init).joined(separator: ", ") + ")"
            #expect(try Expression.parse(wide).evaluate { _ in .null } == .int(0))
        }

        @Test func keyPathsAreDeduplicatedInOrderOfFirstAppearance() throws {
            #expect(try Expression.parse("a + b * a").keyPaths == ["a", "b"])
            #expect(try Expression.parse("pow(x, 2) + y - sqrt(x)").keyPaths == ["x", "y"])
            #expect(try Expression.parse("c ? b : a").keyPaths == ["c", "b", "a"])
            #expect(try Expression.parse("!(z || y) && -x").keyPaths == ["z", "y", "x"])
            #expect(
                try Expression.parse("employees.@sum.salary / employees.@count").keyPaths
                    == ["employees.@sum.salary", "employees.@count"])
            #expect(try Expression.parse("address.city + address").keyPaths == ["address.city", "address"])
            #expect(try Expression.parse("true && null || 1.5 + \"a.b\"").keyPaths == [])
            #expect(try Expression.parse("format(\"%d\", round(min(n, 3)))").keyPaths == ["n"])
        }
    }
}
