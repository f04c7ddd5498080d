/** Certificates capt issues to machines are valid this long (kubeadm's default for leaf certificates). */
export const machineCertificateDays = 365;
