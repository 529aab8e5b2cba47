/** The response headers of `GET /plants`, as the document states them. */
export const listHeaders = {
  Link: {
    type: 'string',
    description:
      '</plants?...&cursor=...>; rel="next" when more plants remain: the next page, relative to the request\'s URL ' +
      '(RFC 8288); its cursor carries the filters and order',
  },
  'X-Total-Count': {
    type: 'integer',
    description: 'With Prefer: count=exact: how many plants match the filters over all pages',
  },
  'Preference-Applied': { type: 'string', description: 'count=exact when X-Total-Count is sent' },
};
