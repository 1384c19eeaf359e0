// Started by `npm run oauth:demo` too, so the starter lives in dev/ (the server's program stays here).
export {
  type AuthorizationServer,
  type AuthorizationServerOptions,
  startAuthorizationServer,
} from '../../../dev/oauth-demo/authorization-server';
