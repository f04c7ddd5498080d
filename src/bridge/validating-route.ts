import type { Logger } from 'pino';
import { admissionResponse, objectNamed, parseAdmissionReview, type AdmissionRequest } from './admission-review';
import type { WebhookRoute } from './admission-webhook';

/** Where the apiserver posts the reviews of the validating webhook. */
export const validatePath = '/validate';

/** The validating webhook: allowed, or refused with capt's message (`decide`'s). */
export const validatingRoute =
  (decide: (request: AdmissionRequest) => Promise<string | undefined>, log: Logger): WebhookRoute =>
  async (body) => {
    const request = parseAdmissionReview(body);
    const refusal = await decide(request);
    if (refusal) log.info({ uid: request.uid, object: objectNamed(request) }, 'admission: refused');
    return admissionResponse(request.uid, refusal);
  };
