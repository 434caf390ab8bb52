//! otlp inputs: fixtures decode into the model and convert to valid Sample v2.
