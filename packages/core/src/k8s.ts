/** A port or other value that is either a number or a name (upstream's intstr.IntOrString). @public */
export type IntOrString = number | string;
