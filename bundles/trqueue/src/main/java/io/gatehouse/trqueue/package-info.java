// SPDX-License-Identifier: Apache-2.0
/** tr_queue: persistent queues on timeranger-style topic files, behind the TrQueueFactory service. Not exported. */
package io.gatehouse.trqueue;
