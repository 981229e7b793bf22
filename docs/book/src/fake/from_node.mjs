// The book's Node snippet (chapter "Testing your code on the fake"), run by scripts/book-clients
// with node-redis against fake-redis-server --clock virtual, whose port it takes from FAKE_PORT.
import assert from "node:assert/strict";

// ANCHOR: snippet
import { createClient } from "redis";

const port = process.env.FAKE_PORT ?? "7379";
const r = await createClient({ url: `redis://127.0.0.1:${port}` })
  .on("error", () => {}) // a broken connection is reported here; node-redis reconnects
  .connect();
await r.set("session", "alice", { expiration: { type: "EX", value: 30 } });
await r.sendCommand(["FAKE.ADVANCE", "31000"]);
assert.equal(await r.exists("session"), 0);

await r.sendCommand(["FAKE.FAULT", "DROP-REPLY", "*", "NEXT", "1"]);
await assert.rejects(r.incr("visits")); // the connection closes unanswered...
assert.equal(await r.get("visits"), "1"); // ...after the write; node-redis reconnects
await r.close();
// ANCHOR_END: snippet
