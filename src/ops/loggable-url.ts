/** Secrets a client put in the URL by mistake (`?access_token=...`): API tokens, JWTs, access_token values. */
const SECRET_IN_URL = /pst_[\w-]+|eyJ[\w-]*\.[\w-]*\.[\w-]*|(?<=[?&]access_token=)[^&#]*/g;
/** Cheaper than SECRET_IN_URL on a URL that holds none, as nearly every URL. */
const MAY_HOLD_SECRET = /pst_|eyJ|access_token=/;

/** The request URL as logged: tokens never reach the logs, wherever the client put them. */
export function loggableUrl(url: string): string {
  return MAY_HOLD_SECRET.test(url) ? url.replace(SECRET_IN_URL, '[redacted]') : url;
}
