/**
 * What each installed provider offers that a spec may ask for, as plain data: the manifest loader and the
 * workflows' validators both read it, so it cannot live with the providers' schemas or activities.
 */
export const providerFailureDomains: Record<string, readonly string[]> = {
  // Every local machine runs on this one host: there is no failure domain to spread over.
  local: [],
};
