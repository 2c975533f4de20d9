// Starts oauth2-mock-server on 127.0.0.1 with a free port and prints "listening PORT".
// Used by crates/servio-client/tests/it/oauth_independent.rs; stops when stdin closes.
import { OAuth2Server } from 'oauth2-mock-server';

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
await server.start(0, '127.0.0.1');
console.log(`listening ${server.address().port}`);
process.stdin.resume();
process.stdin.on('end', async () => {
  await server.stop();
  process.exit(0);
});
