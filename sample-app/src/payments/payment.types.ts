/** What POST /orders/:id/pay answers. */
export type PaymentResult =
  | {
      readonly status: 'paid';
      readonly orderId: number;
      readonly paymentId: number;
      readonly amountCents: number;
      readonly instance: string;
      /** The fencing token of the capture, as a decimal string (JSON has no bigint); null without locks. */
      readonly fence: string | null;
    }
  | { readonly status: 'already-paid'; readonly orderId: number; readonly paidBy: string | null };
