#!/usr/bin/env python3
"""Writes a deterministic benchmark corpus of Servio manifests.

    gen_corpus.py OUT_DIR [--seed N]

OUT_DIR/valid/    1,000 realistic valid manifests of 1 to 200 tools with nested schemas,
                  about a third of them with a brief
OUT_DIR/large/    one valid manifest of about 5 MB
OUT_DIR/invalid/  200 invalid manifests, each with one to four kinds of mistake

The same seed always gives the same bytes.
"""
import argparse, json, os, random

WORDS = ("thread post reply user forum category tag order product invoice customer refund "
         "report page comment media course lesson ticket message draft note event").split()
VERBS = "get list search create update delete archive publish count export".split()


def words(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def camel(parts):
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def prop_schema(rng, depth):
    kind = rng.choice(["string", "string", "integer", "number", "boolean", "array", "object"] if depth < 3 else ["string", "integer", "boolean"])
    schema = {"type": kind, "description": words(rng, rng.randint(3, 12)).capitalize()}
    if kind == "string" and rng.random() < 0.3:
        schema["enum"] = sorted({rng.choice(WORDS) for _ in range(rng.randint(2, 5))})
        schema["default"] = schema["enum"][0]
    elif kind == "string" and rng.random() < 0.2:
        schema["pattern"] = "^[a-z0-9-]{1,%d}$" % rng.randint(8, 64)
    elif kind == "string" and rng.random() < 0.2:
        schema["format"] = rng.choice(["date", "date-time", "email", "uri"])
    elif kind in ("integer", "number"):
        schema["minimum"] = 0
        if rng.random() < 0.5:
            schema["maximum"] = rng.randint(10, 1000)
        if rng.random() < 0.4:
            schema["default"] = rng.randint(0, 10)
    elif kind == "array":
        schema["items"] = prop_schema(rng, depth + 1)
        schema["maxItems"] = rng.randint(1, 100)
    elif kind == "object":
        schema.update(object_schema(rng, depth + 1, rng.randint(1, 4)))
    return schema


def object_schema(rng, depth, n):
    props = {}
    for i in range(n):
        props[f"{rng.choice(WORDS)}_{i}"] = prop_schema(rng, depth)
    required = sorted(rng.sample(sorted(props), k=rng.randint(0, min(2, len(props)))))
    schema = {"type": "object", "properties": props, "required": required}
    if rng.random() < 0.3:
        schema["additionalProperties"] = False
    return schema


def tool(rng, namespace, i):
    verb, noun = rng.choice(VERBS), rng.choice(WORDS)
    return {
        "name": f"{namespace}.{camel([verb, noun, 'v' + str(i)])}",
        "description": f"{verb.capitalize()} {noun}s of the site. " + words(rng, rng.randint(8, 30)).capitalize() + ".",
        "input_schema": object_schema(rng, 1, rng.randint(1, 8)),
    }


def manifest(rng, n_tools, with_brief):
    host = f"{rng.choice(WORDS)}{rng.randint(1, 9999)}.example.com"
    namespace = rng.choice(["forum", "shop", "blog", "courses", "helpdesk"])
    tools = [tool(rng, namespace, i) for i in range(n_tools)]
    doc = {
        "name": words(rng, 2).title(),
        "version": f"{rng.randint(0, 5)}.{rng.randint(0, 20)}.{rng.randint(0, 50)}",
        "description": words(rng, 12).capitalize(),
        "server": {"url": f"https://{host}/api/servio"},
        "auth": {"type": "bearer"} if rng.random() < 0.5 else {
            "type": "oauth2", "authorization_url": f"https://{host}/oauth/authorize",
            "token_url": f"https://{host}/oauth/token", "scopes": ["read", "write"]},
        "tools": tools,
    }
    if with_brief:
        tools.append({
            "name": "shop.getSalesSummary",
            "description": "Summarise sales for a date range: revenue, order count and refunds.",
            "input_schema": {"type": "object", "properties": {
                "from": {"type": "string", "description": "First date, YYYY-MM-DD"},
                "to": {"type": "string", "description": "Last date, YYYY-MM-DD"},
                "timezone": {"type": "string", "description": "IANA time zone"}}, "required": ["from", "to"]},
        })
        doc["brief"] = {"metrics": [
            {"key": "sales.revenue.daily", "tool": "shop.getSalesSummary", "valuePath": "data.totals.revenue", "unit": "USD",
             "args": {"from": "{{periodStart}}", "to": "{{periodEnd}}", "timezone": "{{timezone}}"}},
            {"key": "sales.orders.daily", "tool": "shop.getSalesSummary", "valuePath": "data.totals.orders", "unit": "count",
             "args": {"from": "{{periodStart}}", "to": "{{periodEnd}}"}},
        ]}
    return doc


def break_it(rng, doc):
    for _ in range(rng.randint(1, 4)):
        mistake = rng.randrange(6)
        if mistake == 0:
            doc.pop("version", None)
        elif mistake == 1:
            doc["server"]["url"] = doc["server"]["url"].replace("https:", "http:")
        elif mistake == 2 and doc["tools"]:
            doc["tools"][0]["input_schema"]["type"] = "array"
        elif mistake == 3 and len(doc["tools"]) > 1:
            doc["tools"][1]["name"] = doc["tools"][0]["name"]
        elif mistake == 4 and doc["tools"]:
            props = doc["tools"][-1]["input_schema"]["properties"]
            props[next(iter(props))]["type"] = "int"
        else:
            doc["auth"] = {"type": "apikey"}
    return doc


def write(path, doc):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20261202)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for sub in ("valid", "large", "invalid"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    for i in range(1000):
        n = 1 + int(199 * rng.random() ** 2.5)
        write(os.path.join(args.out, "valid", f"m{i:04}.json"), manifest(rng, n, rng.random() < 0.33))
    big = manifest(rng, 1, True)
    while len(json.dumps(big, indent=2)) < 5_000_000:
        big["tools"][:0] = [tool(rng, "shop", len(big["tools"]) + j) for j in range(200)]
    write(os.path.join(args.out, "large", "large.json"), big)
    for i in range(200):
        write(os.path.join(args.out, "invalid", f"bad{i:03}.json"), break_it(rng, manifest(rng, 1 + int(60 * rng.random() ** 2), rng.random() < 0.3)))


if __name__ == "__main__":
    main()
