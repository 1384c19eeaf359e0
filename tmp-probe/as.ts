import { startAuthorizationServer } from '../test/support/oauth/authorization-server';
(async () => {
  const as = await startAuthorizationServer({ redirectUris: ['http://127.0.0.1:9999/callback'] });
  const meta = await (await fetch(`${as.issuer}/.well-known/openid-configuration`)).json();
  console.log(meta.authorization_endpoint, meta.token_endpoint, meta.registration_endpoint, meta.code_challenge_methods_supported);
  await as.close();
})();
