"""The Python and TypeScript clients at parity: the same calls with the same options (snake_case here, camelCase
there), read from the Python signatures and from tsc's declarations (clients/typescript/dist/index.d.ts); and the API
reference pages (docs/api/) are what clients/api_reference.py makes from them, with every public call documented."""

import inspect
import pathlib
import re
import subprocess
import sys

import kvod
import kvod.aio

REPO = pathlib.Path(__file__).resolve().parents[3]
DECLARATIONS = (REPO / "clients/typescript/dist/index.d.ts").read_text()


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def typescript_members(class_name):
    """{name: set of parameter and option names} of a class's public methods in the .d.ts, and its properties."""
    body = re.search(rf"^export declare class {class_name}\b.*?{{\n(.*?)^}}", DECLARATIONS, re.M | re.S).group(1)
    # Comments may hold brackets: each goes, leaving only the mark of an @internal member.
    body = re.sub(r"/\*\*.*?\*/", lambda comment: " @internal " if "@internal" in comment.group(0) else " ", body,
                  flags=re.S)
    methods, properties = {}, set()
    for declaration in split_top_level(body, ";"):
        if "@internal" in declaration:
            continue
        declaration = " ".join(declaration.split())
        if not declaration or declaration.startswith(("private ", "constructor(")):
            continue
        method = re.match(r"^(\w+)\((.*)\):", declaration)
        if method:
            names = set()
            for parameter in split_parameters(method.group(2)):
                name, _, kind = parameter.partition(":")
                options = re.fullmatch(r"\s*\{(.*)\}\s*", kind)
                names |= set(re.findall(r"(\w+)\??:", options.group(1))) if options else {name.strip(" ?")}
            methods[method.group(1)] = {SAME_PARAMETER.get(name, name) for name in names} - {""}
        elif re.match(r"^(readonly )?(get )?\w+", declaration):
            properties.add(re.sub(r"^(readonly |get )", "", declaration).split("(")[0].split(":")[0].strip(" ?"))
    return methods, properties


def split_top_level(text, separator):
    """`text` split at each `separator` outside brackets and braces."""
    parts, depth, current = [], 0, ""
    for character in text:
        if not (character == ">" and current.endswith("=")):  # `=>` closes nothing
            depth += 1 if character in "{(<[" else -1 if character in "})>]" else 0
        if character == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += character
    return [part for part in parts + [current] if part.strip()]


def split_parameters(text):
    return split_top_level(text, ",")


def python_members(cls):
    methods, properties = {}, set()
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            properties.add(camel(name))
        elif callable(member):
            parameters = [p for p in inspect.signature(member).parameters.values() if p.name != "self"]
            methods[camel(name)] = {camel(p.name) for p in parameters}
    return methods, properties


# What only one side has, and why: an idiom of its language, not a missing feature.
ONLY_PYTHON = {"connect"}  # kvod.aio's explicit second step; TypeScript's `connect()` function does it
ONLY_TYPESCRIPT = {"open"}  # @internal in the .d.ts: `connect()` calls it
# Positional parameters named differently (a name callers never write in TypeScript).
SAME_PARAMETER = {"listener": "hook"}


def test_the_clients_have_the_same_calls_with_the_same_options():
    typescript, typescript_properties = typescript_members("Client")
    for cls in (kvod.Client, kvod.aio.AsyncClient):
        python, python_properties = python_members(cls)
        assert set(python) - ONLY_PYTHON == set(typescript) - ONLY_TYPESCRIPT, cls
        for name in set(python) & set(typescript):
            assert python[name] == typescript[name], (cls.__name__, name, python[name], typescript[name])
        assert python_properties <= typescript_properties, cls
    assert python_members(kvod.Subscription)[0].keys() == typescript_members("Subscription")[0].keys()


def test_the_live_queries_have_the_same_calls():
    from kvod._query import LiveQueryBase
    typescript, typescript_properties = typescript_members("LiveQuery")
    for cls in (kvod.LiveQuery, kvod.aio.AsyncLiveQuery):
        methods, properties = python_members(LiveQueryBase)
        own_methods, own_properties = python_members(cls)
        methods.update(own_methods)
        assert set(methods) == set(typescript) - {"at"}, cls  # at(): Python indexes with live[i]
        for name in methods:
            assert methods[name] == typescript[name], (cls.__name__, name, methods[name], typescript[name])
        assert (properties | own_properties) <= typescript_properties, cls


def test_the_client_options_are_the_same():
    options = set(re.findall(r"^    (\w+)\?:", re.search(r"^export interface ClientOptions \{\n(.*?)^\}", DECLARATIONS,
                                                          re.M | re.S).group(1), re.M))
    for cls in (kvod.Client, kvod.aio.AsyncClient):
        parameters = {camel(p) for p in inspect.signature(cls.__init__).parameters if p not in ("self", "addresses")}
        assert parameters == options, (cls, parameters ^ options)


def test_set_takes_a_ttl_in_both(kvod_server):
    with kvod.Client(kvod_server.address) as client:
        client.set("presence.ada", True, ttl=30)
        expires = client.get_meta("presence.ada")["expires"]
        assert isinstance(expires, int) and expires > 0
        with __import__("pytest").raises(kvod.InvalidParams):
            client.set("presence.ada", True, ttl=-1)
    assert "ttl" in typescript_members("Client")[0]["set"]


def test_the_asyncio_client_takes_a_ttl_and_reads_pages(kvod_server):
    async def scenario():
        client = await kvod.aio.connect(kvod_server.address)
        try:
            await client.set("presence.bob", True, ttl=30)
            assert (await client.get_meta("presence.bob"))["expires"] > 0
            await client.insert("letters", values=["a", "b", "c"])
            assert await client.get_page("letters", 1) == {"value": ["b", "c"], "count": 3, "seq": 2}
        finally:
            await client.close()
    __import__("asyncio").run(scenario())


def test_get_page(kvod_server):
    with kvod.Client(kvod_server.address) as client:
        client.insert("list", values=list(range(10)))
        assert client.get_page("list", 3, 2) == {"value": [3, 4], "count": 10, "seq": 1}
        assert client.get_page("list", offset=8)["value"] == [8, 9]


def test_the_api_reference_pages_are_up_to_date_and_every_call_is_documented():
    result = subprocess.run([sys.executable, str(REPO / "clients/api_reference.py"), "--check"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_package_declares_its_type_hints():
    assert (pathlib.Path(kvod.__file__).parent / "py.typed").is_file()
    assert 'kvod = ["py.typed"]' in (REPO / "clients/python/pyproject.toml").read_text()
