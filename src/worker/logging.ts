import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';
import pino from 'pino';

/**
 * capt's logger: pino, JSON lines on stderr, level from CAPT_LOG_LEVEL (default info). Temporal's
 * runtime logs through the same logger. Nothing secret is logged: payloads are never logged, and
 * errors about secrets name them without holding them.
 */
export const logger = pino(
  {
    level: process.env.CAPT_LOG_LEVEL ?? 'info',
    base: { service: 'capt' },
    // Temporal's runtime passes failures as `error`: without a serializer an Error logs as {}.
    serializers: { error: pino.stdSerializers.err, err: pino.stdSerializers.err },
  },
  pino.destination(2),
);

const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Temporal's Logger interface over pino. */
export const temporalLogger: Logger = {
  log: (level: LogLevel, message: string, meta?: LogMetadata) => logger[levels[level]](meta ?? {}, message),
  trace: (message, meta) => logger.trace(meta ?? {}, message),
  debug: (message, meta) => logger.debug(meta ?? {}, message),
  info: (message, meta) => logger.info(meta ?? {}, message),
  warn: (message, meta) => logger.warn(meta ?? {}, message),
  error: (message, meta) => logger.error(meta ?? {}, message),
};
